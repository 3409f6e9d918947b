//go:build ignore

// dropin.c is the program of the bpf2go drop-in test: what bpf2go users
// write, with maps, a tail call and global variables in every data section.
//
// xdp_count counts packets per first byte in `counts`, adds the packet
// length to the .data variable `bytes_seen`, counts runs in the .bss
// variable `runs`, and tail-calls `xdp_verdict` through `jumps`, which
// returns `verdict` (a const volatile .rodata variable, XDP_PASS unless
// set before loading). Without the tail call it returns XDP_ABORTED.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

int xdp_verdict(struct xdp_md *ctx);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int (struct xdp_md *));
} jumps SEC(".maps") = {
	.values = { [0] = (void *)&xdp_verdict },
};

const volatile __u32 verdict = XDP_PASS; // .rodata
__u64 bytes_seen SEC(".data") = 0;       // .data, though zero
__u64 runs;                              // .bss

SEC("xdp")
int xdp_verdict(struct xdp_md *ctx)
{
	return verdict;
}

SEC("xdp")
int xdp_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 key = 0;
	__u64 one = 1, *n;

	if (data + 1 > end)
		return XDP_DROP;
	key = *(__u8 *)data;
	n = bpf_map_lookup_elem(&counts, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
	bytes_seen += end - data;
	runs++;
	bpf_tail_call(ctx, &jumps, 0);
	return XDP_ABORTED;
}

char _license[] SEC("license") = "GPL";
