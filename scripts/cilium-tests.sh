#!/usr/bin/env bash
# Builds Cilium's BPF unit tests (bpf/tests/*.c: the PKTGEN/SETUP/CHECK
# programs of Cilium's test framework) into a directory outside the repo,
# for TestCiliumBPFTests:
#
#   scripts/cilium-tests.sh [OUTDIR]
#   BPFVM_CILIUM_TESTS=OUTDIR go test . -run TestCiliumBPFTests -v
#
# CILIUM_SRC names a checkout of Cilium's repository (the tests were
# measured on v1.20.2); it is copied into OUTDIR/src and built there. The flags are
# the Cilium loader's (pkg/datapath/loader/compile.go, StandardCFlags) plus
# what bpf/tests/Makefile adds; the scapy packets header that some tests
# include is generated as that Makefile generates it. Nothing is written
# into the repo. Set CLANG for
# another compiler, JOBS for the parallelism.
set -euo pipefail

out=${1:-${BPFVM_CILIUM_TESTS:-/tmp/bpfvm-cilium-tests}}
clang=${CLANG:-clang-19}
jobs=${JOBS:-2}
# Debian's python3, which python3-scapy installs into (a pyenv python3 on
# PATH would not see it).
py=${PYTHON:-/usr/bin/python3}

need=()
command -v "$clang" >/dev/null || need+=(clang-19 llvm-19)
[ -e /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
"$py" -c 'import scapy' 2>/dev/null || need+=(python3-scapy)
if [ ${#need[@]} -gt 0 ]; then
	sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get install -y "${need[@]}" >/dev/null
fi

src=${CILIUM_SRC:?set CILIUM_SRC to a checkout of Cilium (e.g. its v1.20.2 tag)}
[ -d "$src/bpf/tests" ] || { echo "cilium-tests: no bpf/tests in $src" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/src"
mkdir -p "$out/src"
cp -r "$src/bpf" "$out/src/bpf"
chmod -R u+w "$out/src"
tests=$out/src/bpf/tests

# The loader's standard flags, read from the Go source they are kept in.
std=$(sed -n '/StandardCFlags = \[\]string{/,/}/p' "$src/pkg/datapath/loader/compile.go" |
	grep -o '"[^"]*"' | tr -d '"' | tr '\n' ' ')
[ -n "$std" ] || { echo "cilium-tests: StandardCFlags not found in compile.go" >&2; exit 1; }

mkdir -p "$tests/output"
(cd "$tests/scapy" && "$py" scapy_header_gen.py "$tests/output/scapy_bytes.h")

flags="-I$out/src/bpf -I$out/src/bpf/include -g $std -mcpu=v3"
export clang flags tests out
ls "$tests"/*.c | xargs -P "$jobs" -I{} sh -c '
	f={}; n=$(basename "$f" .c)
	if ! (cd "$tests" && $clang $flags -c "$f" -o "$out/$n.o" 2>"$out/$n.log"); then
		echo "cilium-tests: $n.c does not build (see $out/$n.log)" >&2
	fi
	[ -s "$out/$n.log" ] || rm -f "$out/$n.log"'
echo "cilium-tests: $(ls "$out"/*.o | wc -l) objects in $out"
