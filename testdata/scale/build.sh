#!/bin/sh
# build.sh compiles every testdata/scale/*.c into the matching .o with clang
# for the BPF target. It runs from `go generate ./testdata/scale/` (see
# gen.go); CI has no clang, so the objects are committed.
#
# CLANG overrides the compiler (default clang-19).
set -eu

cd "$(dirname "$0")"

CLANG=${CLANG:-clang-19}
# bpf/bpf_helpers.h includes <asm/types.h>, which Debian keeps in the
# multiarch directory.
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

for src in *.c; do
	obj="${src%.c}.o"
	echo "$CLANG -target bpf $src -> $obj"
	# -fdebug-prefix-map keeps the checkout path out of DWARF so the objects
	# are reproducible.
	"$CLANG" -O2 -g -Wall -Werror -target bpf \
		-fdebug-prefix-map="$PWD"=. \
		-I/usr/include/"$MULTIARCH" \
		-c "$src" -o "$obj"
done
