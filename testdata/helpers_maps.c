//go:build ignore

// helpers_maps.c exercises the helpers of special maps: queue and stack
// (bpf_map_push_elem, bpf_map_pop_elem, bpf_map_peek_elem), ring buffers
// (bpf_ringbuf_output/reserve/submit/discard/query) and program arrays
// (bpf_tail_call). XDP programs read their arguments from the packet after
// the 14-byte Ethernet header and write results back into it; the tests
// compare results, packets, map contents and ring records with the
// kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define ARGS(type)                               \
	void *data = (void *)(long)ctx->data;    \
	void *end = (void *)(long)ctx->data_end; \
	type *a = data + 14;                     \
	if ((void *)(a + 1) > end)               \
		return -1;

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 4);
	__type(value, __u32);
} queue SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, 4);
	__type(value, __u32);
} stack SEC(".maps");

struct qs_args {
	__u32 op;    // 0 push, 1 pop, 2 peek
	__u32 which; // 0 queue, 1 stack
	__u32 flags; // push flags
	__u32 value; // in: pushed; out: popped or peeked
};

// qs: one queue or stack operation; returns the helper's result.
SEC("xdp")
int qs(struct xdp_md *ctx)
{
	ARGS(struct qs_args);
	__u32 v = a->value;
	long ret = -2;

	if (a->which == 0) {
		switch (a->op) {
		case 0: ret = bpf_map_push_elem(&queue, &v, a->flags); break;
		case 1: ret = bpf_map_pop_elem(&queue, &v); break;
		case 2: ret = bpf_map_peek_elem(&queue, &v); break;
		}
	} else {
		switch (a->op) {
		case 0: ret = bpf_map_push_elem(&stack, &v, a->flags); break;
		case 1: ret = bpf_map_pop_elem(&stack, &v); break;
		case 2: ret = bpf_map_peek_elem(&stack, &v); break;
		}
	}
	a->value = v;
	return ret;
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

struct rb_args {
	__u32 op;  // 0 output, 1 reserve+submit, 2 reserve+discard, 3 query, 4 fill
	__u32 len; // output: (len & 31) + 1 bytes of data
	__u64 flags;
	__u8 data[32];
};

// ring: one ring buffer operation.
//   - output: bpf_ringbuf_output(&rb, data, len, flags), returns its result
//   - reserve+submit / reserve+discard: reserves 16 bytes with flags,
//     fills them from data, submits or discards; returns 1 if the
//     reservation failed, else 0
//   - query: returns bpf_ringbuf_query(&rb, flags)
//   - fill: outputs 32-byte records until one fails; returns the count
SEC("xdp")
int ring(struct xdp_md *ctx)
{
	ARGS(struct rb_args);
	__u8 buf[32];
	__u64 flags = a->flags;
	__u32 len = (a->len & 31) + 1;
	__u8 *p;

	__builtin_memcpy(buf, a->data, sizeof(buf));
	switch (a->op) {
	case 0:
		return bpf_ringbuf_output(&rb, buf, len, flags);
	case 1:
	case 2:
		p = bpf_ringbuf_reserve(&rb, 16, flags);
		if (!p)
			return 1;
		__builtin_memcpy(p, buf, 16);
		if (a->op == 1)
			bpf_ringbuf_submit(p, 0);
		else
			bpf_ringbuf_discard(p, 0);
		return 0;
	case 3:
		return bpf_ringbuf_query(&rb, flags);
	case 4:
		for (int i = 0; i < 200; i++) {
			buf[0] = i;
			if (bpf_ringbuf_output(&rb, buf, sizeof(buf), 0))
				return i;
		}
		return 200;
	}
	return -2;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} jmp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct tail_args {
	__u32 index;
	__u32 sub; // tail call from a subprogram
};

static __noinline int tail_sub(struct xdp_md *ctx, __u32 index)
{
	bpf_tail_call(ctx, &jmp, index);
	return index * 2 + 7; // not a constant, which clang would propagate
}

// tail: bpf_tail_call(ctx, &jmp, index); returns 100 when the call does not
// happen. With sub set the call is made from a subprogram, whose caller
// adds 1000 to what it returns (index * 2 + 7 when the call does not
// happen).
SEC("xdp")
int tail(struct xdp_md *ctx)
{
	ARGS(struct tail_args);
	__u32 index = a->index;

	if (a->sub)
		return tail_sub(ctx, index) + 1000;
	bpf_tail_call(ctx, &jmp, index);
	return 100;
}

// target0 (slot 0): counts its runs in counts[0] (a map the caller does not
// use) and returns 10.
SEC("xdp")
int target0(struct xdp_md *ctx)
{
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&counts, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
	return 10;
}

// target1 (slot 1): sets the first packet byte to 0xab and returns 20.
SEC("xdp")
int target1(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if ((void *)(data + 1) > end)
		return -1;
	data[0] = 0xab;
	return 20;
}

// recurse (slot 2): counts its runs in counts[1] and tail-calls itself
// until the kernel's limit of 33 tail calls stops it; then returns 30.
SEC("xdp")
int recurse(struct xdp_md *ctx)
{
	__u32 key = 1;
	__u64 *n = bpf_map_lookup_elem(&counts, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
	bpf_tail_call(ctx, &jmp, 2);
	return 30;
}

char _license[] SEC("license") = "GPL";
