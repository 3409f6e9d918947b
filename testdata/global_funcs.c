//go:build ignore

// global_funcs.c tests global functions: non-static __noinline functions,
// which the verifier checks once, on their own, against their BTF
// prototype, instead of at each call. Their arguments are what the
// prototype says: the context (struct xdp_md *, or any pointer tagged
// arg:ctx), scalars, and pointers to memory of the pointee's size that may
// be NULL unless tagged arg:nonnull. One global function calls another, and
// one moves the packet, so the caller reloads its packet pointers.
//
// Behaviour: for a packet of at least 4 bytes b0..b3, h = {b0, b1, b2, b3},
// s = mix(b0 + b1, b2 + b3) = (b0 + b1) * 31 + (b2 + b3); counters[0] += s;
// the packet loses its first 2 bytes; the program returns s << 8 | the new
// first byte (b2), or 2 (XDP_PASS) for packets shorter than 4 bytes and 1
// (XDP_DROP) when nothing is left after the move.
//
// Expected: packet 01 02 03 04 05 06: s = 3 * 31 + 7 = 100, returns
// 100 << 8 | 3 = 25603, counters[0] = 100 after one run.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// As libbpf's bpf_helpers.h defines them in newer versions.
#define __arg_ctx __attribute__((btf_decl_tag("arg:ctx")))
#define __arg_nonnull __attribute__((btf_decl_tag("arg:nonnull")))

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct hdr {
	__u8 b[4];
};

// first_bytes copies the packet's first bytes into out, which may be NULL.
__noinline int first_bytes(struct xdp_md *ctx, struct hdr *out)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (!out || data + sizeof(*out) > end)
		return -1;
	__builtin_memcpy(out, data, sizeof(*out));
	return 0;
}

// mix takes scalars only.
__noinline int mix(int a, int b)
{
	return a * 31 + b;
}

// sum reads a header it must check for NULL, and calls another global
// function.
__noinline int sum(const struct hdr *h)
{
	if (!h)
		return 0;
	return mix(h->b[0] + h->b[1], h->b[2] + h->b[3]);
}

// count adds n to a counter that is never NULL.
__noinline int count(__u64 *c __arg_nonnull, int n)
{
	*c += n;
	return (int)*c;
}

// drop_two moves the packet's start: every packet pointer of its callers
// is invalid afterwards.
__noinline int drop_two(void *ctx __arg_ctx)
{
	return bpf_xdp_adjust_head(ctx, 2);
}

SEC("xdp")
int global_funcs(struct xdp_md *ctx)
{
	struct hdr h = {};
	__u32 key = 0;
	__u64 *c;
	void *data, *end;
	int s;

	if (first_bytes(ctx, &h))
		return XDP_PASS;
	s = sum(&h);
	c = bpf_map_lookup_elem(&counters, &key);
	if (c)
		count(c, s);
	if (drop_two(ctx))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + 1 > end)
		return XDP_DROP;
	return s << 8 | *(__u8 *)data;
}

char _license[] SEC("license") = "GPL";
