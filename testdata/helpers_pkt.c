//go:build ignore

// helpers_pkt.c exercises the packet helpers: bpf_skb_load_bytes,
// bpf_skb_store_bytes, bpf_l3_csum_replace, bpf_l4_csum_replace,
// bpf_csum_diff, bpf_xdp_adjust_meta/head/tail and bpf_redirect.
//
// Each program calls one helper with arguments it reads from its input, so
// that one program covers a table of cases, and returns the helper's
// result. tc programs read their arguments from skb->cb[0..4] (passed as
// the test run's context), XDP programs from the packet right after the
// 14-byte Ethernet header. The tests compare return values and output
// packets with the kernel's BPF_PROG_TEST_RUN.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// skb_load: bpf_skb_load_bytes(skb, cb[0], buf, (cb[1] & 31) + 1), then
// stores the 32-byte buffer (zeroed on failure) at packet offset 22 and
// returns the load's result. Needs a packet of at least 54 bytes.
SEC("tc")
int skb_load(struct __sk_buff *skb)
{
	__u8 buf[32] = {};
	__u32 off = skb->cb[0], len = (skb->cb[1] & 31) + 1;
	long ret;

	ret = bpf_skb_load_bytes(skb, off, buf, len);
	bpf_skb_store_bytes(skb, 22, buf, sizeof(buf), 0);
	return ret;
}

// skb_store: bpf_skb_store_bytes(skb, cb[0], a0 a1 .. af, (cb[1] & 15) + 1,
// cb[2]).
SEC("tc")
int skb_store(struct __sk_buff *skb)
{
	__u8 buf[16];
	__u32 off = skb->cb[0], len = (skb->cb[1] & 15) + 1;

	for (int i = 0; i < 16; i++)
		buf[i] = 0xa0 + i;
	return bpf_skb_store_bytes(skb, off, buf, len, skb->cb[2]);
}

// l3_csum: bpf_l3_csum_replace(skb, cb[0], from cb[2], to cb[3], flags cb[1]).
SEC("tc")
int l3_csum(struct __sk_buff *skb)
{
	return bpf_l3_csum_replace(skb, skb->cb[0], skb->cb[2], skb->cb[3], skb->cb[1]);
}

// l4_csum: bpf_l4_csum_replace(skb, cb[0], from cb[2], to cb[3], flags cb[1]).
SEC("tc")
int l4_csum(struct __sk_buff *skb)
{
	return bpf_l4_csum_replace(skb, skb->cb[0], skb->cb[2], skb->cb[3], skb->cb[1]);
}

// csum_diff: loads 64 packet bytes from offset 14 to the stack and returns
// bpf_csum_diff(buf, cb[0], buf + 32, cb[1], cb[2]); sizes above 32 give -1.
SEC("tc")
int csum_diff(struct __sk_buff *skb)
{
	__u8 buf[64] = {};
	__u32 fsize = skb->cb[0], tsize = skb->cb[1];

	if (fsize > 32 || tsize > 32)
		return -1;
	if (bpf_skb_load_bytes(skb, 14, buf, sizeof(buf)))
		return -2;
	return bpf_csum_diff((void *)buf, fsize, (void *)(buf + 32), tsize, skb->cb[2]);
}

// tc_redirect: bpf_redirect(cb[0], cb[1]).
SEC("tc")
int tc_redirect(struct __sk_buff *skb)
{
	return bpf_redirect(skb->cb[0], skb->cb[1]);
}

// sock_load: bpf_skb_load_bytes(skb, cb[0], &v, 4) in a socket filter,
// whose packet starts at the network header; returns v, or the error.
SEC("socket")
int sock_load(struct __sk_buff *skb)
{
	__u32 v = 0;
	long ret = bpf_skb_load_bytes(skb, skb->cb[0], &v, sizeof(v));

	return ret ? ret : v;
}

struct xdp_args {
	__s32 a, b, c;
};

// xdp_adjust: bpf_xdp_adjust_meta(a), bpf_xdp_adjust_head(b),
// bpf_xdp_adjust_tail(c) in turn, then fills the metadata area with 0xee
// (its first 4 bytes at most) and returns the negated results in bytes 0,
// 1 and 2.
SEC("xdp")
int xdp_adjust(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct xdp_args *a = data + 14;
	long r1, r2, r3;
	__u8 *meta;

	if ((void *)(a + 1) > end)
		return -1;
	int meta_delta = a->a, head = a->b, tail = a->c;

	r1 = bpf_xdp_adjust_meta(ctx, meta_delta);
	r2 = bpf_xdp_adjust_head(ctx, head);
	r3 = bpf_xdp_adjust_tail(ctx, tail);

	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(meta + 4) <= data) {
		meta[0] = 0xee;
		meta[1] = 0xee;
		meta[2] = 0xee;
		meta[3] = 0xee;
	}
	return (-r1 & 0xff) | (-r2 & 0xff) << 8 | (-r3 & 0xff) << 16;
}

// xdp_redirect: bpf_redirect(a, b).
SEC("xdp")
int xdp_redirect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct xdp_args *a = data + 14;

	if ((void *)(a + 1) > end)
		return -1;
	return bpf_redirect(a->a, (__u32)a->b);
}

char _license[] SEC("license") = "GPL";
