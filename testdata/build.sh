#!/bin/sh
# build.sh compiles every testdata/*.c into the matching .o with clang for the
# BPF target, plus a big-endian <name>-eb.o of each legacy_*.c to exercise
# byte-order handling in the legacy map parser. It runs from
# `go generate ./testdata/` (see gen.go); CI has no clang, so the objects are
# committed.
#
# CLANG overrides the compiler (default clang-19).
set -eu

cd "$(dirname "$0")"

CLANG=${CLANG:-clang-19}
# bpf/bpf_helpers.h includes <asm/types.h>, which Debian keeps in the
# multiarch directory.
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

# build TARGET SRC OBJ
build() {
	echo "$CLANG -target $1 $2 -> $3"
	# -fdebug-prefix-map keeps the checkout path out of DWARF so the objects
	# are reproducible.
	"$CLANG" -O2 -g -Wall -Werror -target "$1" \
		-fdebug-prefix-map="$PWD"=. \
		-I/usr/include/"$MULTIARCH" \
		-c "$2" -o "$3"
}

for src in *.c; do
	build bpf "$src" "${src%.c}.o"
done

for src in legacy_*.c; do
	build bpfeb "$src" "${src%.c}-eb.o"
done
