#!/bin/sh
# cilium-objects.sh builds Cilium's datapath objects (bpf_lxc, bpf_host,
# bpf_overlay, bpf_xdp, bpf_sock, bpf_wireguard) from a checkout of
# Cilium's repository (CILIUM_SRC), outside this one, with Cilium's own
# Makefile (its default build: the MAX_BASE_OPTIONS configuration the
# complexity tests load). Nothing of Cilium is committed here.
#
# Usage: scripts/cilium-objects.sh [outdir]   (default /tmp/cilium-objs)
# Then:  BPFVM_CILIUM_OBJS=<outdir> go test . -run TestCiliumObjects
#
# Environment: CILIUM_SRC (required; measured on v1.20.2), CLANG (clang-19).
set -eu

clang=${CLANG:-clang-19}
out=${1:-/tmp/cilium-objs}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=${CILIUM_SRC:?set CILIUM_SRC to a checkout of Cilium (e.g. its v1.20.2 tag)}
[ -d "$src/bpf" ] || { echo "no $src/bpf" >&2; exit 1; }

# Build in a writable copy of what the
# Makefiles need (the bpf tree and the root's Makefile.defs and .quiet).
tree="$work/cilium"
mkdir -p "$tree"
cp -r "$src/bpf" "$tree/bpf"
cp "$src/Makefile.defs" "$src/Makefile.quiet" "$tree/"
[ -f "$src/VERSION" ] && cp "$src/VERSION" "$tree/"
chmod -R u+w "$tree"

objs="bpf_lxc.o bpf_host.o bpf_overlay.o bpf_xdp.o bpf_sock.o bpf_wireguard.o"
make -C "$tree/bpf" -j"$(nproc)" CLANG="$clang" V=0 $objs

mkdir -p "$out"
for o in $objs; do cp "$tree/bpf/$o" "$out/"; done
echo "$src built with $clang into $out:"
ls -l "$out"
