// Package tclpm holds the tc_lpm example: a tc program in C
// (bpf/tc_lpm.c) that drops packets to the CIDRs of an LPM trie policy,
// reporting them through a perf event array, and routes the others with
// bpf_fib_lookup on a host-supplied routing table. Its prebuilt object
// runs without clang; tc_lpm_test.go is the worked example: it fills the
// trie, runs packets through bpfvm, reads the reports with the perf
// reader and, where bpf() is permitted, compares everything with the
// kernel in a network namespace set up as bpfvm's world.
package tclpm

//go:generate clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c bpf/tc_lpm.c -o tc_lpm.o
