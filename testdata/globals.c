//go:build ignore

// globals.c tests global variables in .data, .rodata and .bss, which loaders
// turn into single-entry array maps.
//
// Behaviour: every run increments the .bss counter `runs`, adds `step` to
// the .data variable `total` (initial value 100), and returns
// total + runs * 1000 + magic. `step` (7) and `magic` (42) are const volatile
// .rodata variables, so a loader may rewrite them before loading; .rodata is
// read-only for the program (BPF_F_RDONLY_PROG).
//
// Expected with default constants: first run returns
// (100+7) + 1*1000 + 42 = 1149; the second run returns
// (107+7) + 2*1000 + 42 = 2156.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

const volatile __u32 step = 7;		// .rodata, offset 0
const volatile __u32 magic = 42;	// .rodata, offset 4

__u64 runs;		// .bss
__u64 total = 100;	// .data

SEC("xdp")
int globals_entry(struct xdp_md *ctx)
{
	runs++;
	total += step;
	return (int)(total + runs * 1000 + magic);
}

char _license[] SEC("license") = "GPL";
