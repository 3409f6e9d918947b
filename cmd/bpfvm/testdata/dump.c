// dump.c: a program without context accesses (whose rewritten form is the
// kernel's too), with branches, a helper and a static subprogram, for
// comparing prog dump xlated and its CFG with bpftool's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((noinline)) int twice(int x)
{
	return x < 100 ? x * 2 : x;
}

SEC("xdp")
int pick(struct xdp_md *ctx)
{
	unsigned int r = bpf_get_prandom_u32();
	if (r & 1)
		return XDP_DROP;
	if (r & 2)
		return twice(r & 7);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
