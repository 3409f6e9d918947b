//go:build ignore

// helpers_loop.c exercises bpf_loop and bpf_for_each_map_elem. XDP
// programs read their arguments from the packet after the 14-byte Ethernet
// header and write results back into the packet; the tests compare both,
// and the maps, with the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define ARGS(type)                                             \
	void *data = (void *)(long)ctx->data;                  \
	void *end = (void *)(long)ctx->data_end;               \
	type *a = data + 14;                                   \
	if ((void *)(a + 1) > end)                             \
		return -1;

struct loop_args {
	__u32 nr;
	__u32 flags;
	__u32 stop;
	__u32 pad;
	__u64 sum; // out: sum of the indices seen
	__u64 ret; // out: bpf_loop's result
};

struct loop_ctx {
	__u64 sum;
	__u32 stop;
};

static long loop_cb(__u64 index, void *c)
{
	struct loop_ctx *lc = c;

	lc->sum += index;
	return index == lc->stop;
}

// loop: bpf_loop(nr, loop_cb, &ctx, flags), where the callback adds the
// index to ctx.sum (on the caller's stack) and stops at index stop. Writes
// the sum and the result into the packet and returns the result.
SEC("xdp")
int loop(struct xdp_md *ctx)
{
	ARGS(struct loop_args);
	struct loop_ctx lc = {.stop = a->stop};
	long ret = bpf_loop(a->nr, loop_cb, &lc, a->flags);

	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	a = data + 14;
	if ((void *)(a + 1) > end)
		return -1;
	a->sum = lc.sum;
	a->ret = ret;
	return ret;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} hash SEC(".maps");

struct each_args {
	__u32 stop;  // stop after the element with this key
	__u32 flags; // bit 0: delete each element (hash); bit 1: pass flags 1
	__u64 sum;   // out: sum of key * 1000 + value
	__u64 ret;   // out: bpf_for_each_map_elem's result
};

struct each_ctx {
	__u64 sum;
	__u32 stop;
	__u32 del;
};

static long each_cb(void *map, __u32 *key, __u64 *val, struct each_ctx *c)
{
	c->sum += *key * 1000 + *val;
	*val += 1;
	if (c->del)
		bpf_map_delete_elem(map, key);
	return *key == c->stop;
}

// foreach_array / foreach_hash: bpf_for_each_map_elem over arr or hash; the
// callback sums key * 1000 + value, increments the value and, with flag
// bit 0, deletes the element.
static __always_inline int foreach(struct xdp_md *ctx, void *map)
{
	ARGS(struct each_args);
	struct each_ctx c = {.stop = a->stop, .del = a->flags & 1};
	long ret = bpf_for_each_map_elem(map, each_cb, &c, (a->flags >> 1) & 1);

	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	a = data + 14;
	if ((void *)(a + 1) > end)
		return -1;
	a->sum = c.sum;
	a->ret = ret;
	return ret;
}

SEC("xdp")
int foreach_array(struct xdp_md *ctx) { return foreach(ctx, &arr); }

SEC("xdp")
int foreach_hash(struct xdp_md *ctx) { return foreach(ctx, &hash); }

char _license[] SEC("license") = "GPL";
