//go:build ignore

// lpm_bloom.c exercises LPM tries and bloom filters from programs:
// bpf_map_lookup_elem (longest-prefix match), bpf_map_update_elem and
// bpf_map_delete_elem on IPv4- and IPv6-shaped tries, and
// bpf_map_push_elem / bpf_map_peek_elem on a bloom filter with three hash
// functions (map_extra). XDP programs read their arguments from the packet
// after the 14-byte Ethernet header and write results back into it; the
// tests compare results, packets and map contents with the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define ARGS(type)                               \
	void *data = (void *)(long)ctx->data;    \
	void *end = (void *)(long)ctx->data_end; \
	type *a = data + 14;                     \
	if ((void *)(a + 1) > end)               \
		return -1;

struct key4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct key6 {
	__u32 prefixlen;
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct key4);
	__type(value, __u32);
} v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct key6);
	__type(value, __u64);
} v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_BLOOM_FILTER);
	__uint(max_entries, 64);
	__uint(map_extra, 3);
	__type(value, __u32);
} bloom SEC(".maps");

struct lpm_args {
	__u32 op;    // 0 lookup, 1 update, 2 delete
	__u32 which; // 0 v4, 1 v6
	__u32 prefixlen;
	__u32 flags;
	__u8 addr[16];
	__u64 value; // in: stored; out: found
};

// lpm: one trie operation; returns the helper's result (lookups: 0 when
// found, 1 when not).
SEC("xdp")
int lpm(struct xdp_md *ctx)
{
	ARGS(struct lpm_args);
	long ret = -2;

	if (a->which == 0) {
		struct key4 k = {.prefixlen = a->prefixlen};
		__u32 v = a->value;
		__builtin_memcpy(k.addr, a->addr, 4);
		switch (a->op) {
		case 0: {
			__u32 *p = bpf_map_lookup_elem(&v4, &k);
			if (!p)
				return 1;
			a->value = *p;
			return 0;
		}
		case 1: ret = bpf_map_update_elem(&v4, &k, &v, a->flags); break;
		case 2: ret = bpf_map_delete_elem(&v4, &k); break;
		}
	} else {
		struct key6 k = {.prefixlen = a->prefixlen};
		__u64 v = a->value;
		__builtin_memcpy(k.addr, a->addr, 16);
		switch (a->op) {
		case 0: {
			__u64 *p = bpf_map_lookup_elem(&v6, &k);
			if (!p)
				return 1;
			a->value = *p;
			return 0;
		}
		case 1: ret = bpf_map_update_elem(&v6, &k, &v, a->flags); break;
		case 2: ret = bpf_map_delete_elem(&v6, &k); break;
		}
	}
	return ret;
}

struct bloom_args {
	__u32 op; // 0 push, 1 peek
	__u32 flags;
	__u32 value;
};

// bloom_op: one bloom filter operation; returns the helper's result.
SEC("xdp")
int bloom_op(struct xdp_md *ctx)
{
	ARGS(struct bloom_args);
	__u32 v = a->value;

	if (a->op == 0)
		return bpf_map_push_elem(&bloom, &v, a->flags);
	return bpf_map_peek_elem(&bloom, &v);
}

// lpm_bench: the IPv4 destination of an Ethernet frame looked up in v4,
// the loop of a CIDR policy: returns the value found, or 0.
SEC("xdp")
int lpm_bench(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *ip = data + 14;
	struct key4 k = {.prefixlen = 32};
	__u32 *p;

	if ((void *)(ip + 20) > end)
		return 0;
	__builtin_memcpy(k.addr, ip + 16, 4);
	p = bpf_map_lookup_elem(&v4, &k);
	return p ? *p : 0;
}

char _license[] SEC("license") = "GPL";
