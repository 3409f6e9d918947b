#!/bin/sh
# build.sh compiles the CLI's test objects (testdata/*.c) with clang for the
# BPF target. It runs from `go generate ./cmd/bpfvm`; the objects are
# committed, as CI has no clang. CLANG overrides the compiler.
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang-19}
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
for src in *.c; do
	echo "$CLANG -target bpf $src -> ${src%.c}.o"
	"$CLANG" -O2 -g -Wall -Werror -target bpf -fdebug-prefix-map="$PWD"=. \
		-I/usr/include/"$MULTIARCH" -c "$src" -o "${src%.c}.o"
done
