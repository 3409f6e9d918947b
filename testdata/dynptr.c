//go:build ignore

// dynptr.c exercises dynptrs at run time: local ones over a map value,
// ring buffer ones, and skb and XDP ones over the packet, through the
// dynptr helpers and kfuncs. Each program reads its arguments from its
// input (tc: skb->cb[0..4]; XDP: the four u32 after the 14-byte Ethernet
// header) and returns what the calls returned, so that the tests compare
// return values and output packets with the kernel's BPF_PROG_TEST_RUN.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern int bpf_dynptr_from_skb(struct __sk_buff *s, __u64 flags, struct bpf_dynptr *ptr__uninit) __ksym;
extern int bpf_dynptr_from_xdp(struct xdp_md *x, __u64 flags, struct bpf_dynptr *ptr__uninit) __ksym;
extern void *bpf_dynptr_slice(const struct bpf_dynptr *p, __u32 offset, void *buffer__opt, __u32 buffer__szk) __ksym;
extern void *bpf_dynptr_slice_rdwr(const struct bpf_dynptr *p, __u32 offset, void *buffer__opt, __u32 buffer__szk) __ksym;
extern int bpf_dynptr_adjust(const struct bpf_dynptr *p, __u32 start, __u32 end) __ksym;
extern int bpf_dynptr_clone(const struct bpf_dynptr *p, struct bpf_dynptr *clone__uninit) __ksym;
extern __u32 bpf_dynptr_size(const struct bpf_dynptr *p) __ksym;
extern _Bool bpf_dynptr_is_null(const struct bpf_dynptr *p) __ksym;
extern _Bool bpf_dynptr_is_rdonly(const struct bpf_dynptr *p) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[64]);
} buf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

// pack puts two results of at most 16 bits (errnos, small sizes) in one
// return value.
static __always_inline int pack(long a, long b)
{
	return (a & 0xffff) << 16 | (b & 0xffff);
}

// skb_rw: from_skb, then bpf_dynptr_read(8 bytes at cb[0], flags cb[1])
// and bpf_dynptr_write of what was read at cb[2] with flags cb[3].
SEC("tc")
int skb_rw(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	__u8 tmp[8] = {};
	long r, w;

	if (bpf_dynptr_from_skb(skb, 0, &d))
		return -1;
	r = bpf_dynptr_read(tmp, sizeof(tmp), &d, skb->cb[0], skb->cb[1]);
	w = bpf_dynptr_write(&d, skb->cb[2], tmp, sizeof(tmp), skb->cb[3]);
	return pack(r, w);
}

// skb_slice: bpf_dynptr_slice of 4 bytes at cb[0] (into a buffer if cb[2])
// returned, after bpf_dynptr_slice_rdwr of 2 bytes at cb[1] set to 0xab.
SEC("tc")
int skb_slice(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	__u8 tmp[4] = {};
	__u8 *w;
	__u32 *p;

	if (bpf_dynptr_from_skb(skb, 0, &d))
		return -1;
	w = bpf_dynptr_slice_rdwr(&d, skb->cb[1], NULL, 2);
	if (w) {
		w[0] = 0xab;
		w[1] = 0xab;
	}
	p = bpf_dynptr_slice(&d, skb->cb[0], skb->cb[2] ? tmp : NULL, 4);
	if (!p)
		return -2;
	return *p;
}

// skb_adjust: bpf_dynptr_adjust(cb[0], cb[1]) and the size after it, then
// a clone's first byte after a second adjust of the clone by cb[2].
SEC("tc")
int skb_adjust(struct __sk_buff *skb)
{
	struct bpf_dynptr d, c;
	__u8 b = 0;
	long a;

	if (bpf_dynptr_from_skb(skb, 0, &d))
		return -1;
	a = bpf_dynptr_adjust(&d, skb->cb[0], skb->cb[1]);
	bpf_dynptr_clone(&d, &c);
	bpf_dynptr_adjust(&c, skb->cb[2], bpf_dynptr_size(&c));
	bpf_dynptr_read(&b, 1, &c, 0, 0);
	return pack(a, bpf_dynptr_size(&d)) ^ b << 8;
}

// skb_flags: bpf_dynptr_from_skb with flags cb[0]: its result, and
// whether the dynptr is then NULL.
SEC("tc")
int skb_flags(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	long r;

	r = bpf_dynptr_from_skb(skb, skb->cb[0], &d);
	return pack(r, bpf_dynptr_is_null(&d) | bpf_dynptr_is_rdonly(&d) << 1);
}

// filter_rdonly: a socket filter's skb dynptr is read-only: writes fail
// and bpf_dynptr_slice_rdwr is refused by the verifier.
SEC("socket")
int filter_rdonly(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	__u8 tmp[2] = {1, 2};

	bpf_dynptr_from_skb(skb, 0, &d);
	return pack(bpf_dynptr_write(&d, 0, tmp, sizeof(tmp), 0), bpf_dynptr_is_rdonly(&d));
}

// xdp_args reads the program's four arguments after the Ethernet header.
static __always_inline int xdp_args(struct xdp_md *ctx, __u32 a[4])
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;

	if (data + 14 + 16 > end)
		return -1;
	__builtin_memcpy(a, data + 14, 16);
	return 0;
}

// xdp_rw: as skb_rw, over the XDP packet.
SEC("xdp")
int xdp_rw(struct xdp_md *ctx)
{
	struct bpf_dynptr d;
	__u8 tmp[8] = {};
	__u32 a[4];

	if (xdp_args(ctx, a) || bpf_dynptr_from_xdp(ctx, 0, &d))
		return -1;
	return pack(bpf_dynptr_read(tmp, sizeof(tmp), &d, a[0], a[1]),
		    bpf_dynptr_write(&d, a[2], tmp, sizeof(tmp), a[3]));
}

// xdp_slice: as skb_slice, over the XDP packet.
SEC("xdp")
int xdp_slice(struct xdp_md *ctx)
{
	struct bpf_dynptr d;
	__u8 tmp[4] = {};
	__u32 a[4], *p;
	__u8 *w;

	if (xdp_args(ctx, a) || bpf_dynptr_from_xdp(ctx, 0, &d))
		return -1;
	w = bpf_dynptr_slice_rdwr(&d, a[1], NULL, 2);
	if (w) {
		w[0] = 0xab;
		w[1] = 0xab;
	}
	p = bpf_dynptr_slice(&d, a[0], a[2] ? tmp : NULL, 4);
	if (!p)
		return -2;
	return *p;
}

// local: a local dynptr over the map value (size a[0], flags a[1]): the
// results of from_mem, a write of 4 bytes at a[2] and a read of them back
// through bpf_dynptr_data at a[3], and the size.
SEC("xdp")
int local(struct xdp_md *ctx)
{
	struct bpf_dynptr d;
	__u32 a[4], k = 0, v = 0x01020304;
	__u8 *val, *p;
	long f, w;

	if (xdp_args(ctx, a))
		return -1;
	val = bpf_map_lookup_elem(&buf, &k);
	if (!val)
		return -1;
	f = bpf_dynptr_from_mem(val, a[0] & 63, a[1], &d);
	w = bpf_dynptr_write(&d, a[2], &v, sizeof(v), 0);
	p = bpf_dynptr_data(&d, a[3], 4);
	if (!p)
		return pack(f, w) ^ 0x8000;
	return pack(f, w) ^ (p[0] << 8) ^ bpf_dynptr_size(&d) << 24;
}

// ring: a ring buffer dynptr of a[0] bytes (flags a[1]) written at a[2],
// submitted when a[3] is 0, else discarded; the reserve's and the
// write's results.
SEC("xdp")
int ring(struct xdp_md *ctx)
{
	struct bpf_dynptr d;
	__u32 a[4], v = 0xdeadbeef;
	long r, w;

	if (xdp_args(ctx, a))
		return -1;
	r = bpf_ringbuf_reserve_dynptr(&rb, a[0], a[1], &d);
	w = bpf_dynptr_write(&d, a[2], &v, sizeof(v), 0);
	if (a[3])
		bpf_ringbuf_discard_dynptr(&d, 0);
	else
		bpf_ringbuf_submit_dynptr(&d, 0);
	return pack(r, w);
}

char _license[] SEC("license") = "GPL";
