// Package xdpfilter holds the xdp_filter example: an XDP program in C
// (bpf/xdp_filter.c), its prebuilt object, so that running it needs no clang,
// and two sample packets (telnet.pkt is dropped, https.pkt passes).
package xdpfilter

//go:generate clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c bpf/xdp_filter.c -o xdp_filter.o
