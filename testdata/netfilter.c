//go:build ignore

// netfilter.c: a netfilter program that reports what a run gives it (the
// hook state, the socket buffer and its device, the packet through a
// dynptr) in an array and decides from the IP header: NF_DROP for an odd
// TTL or hop limit or a packet that is not IP, NF_ACCEPT otherwise. The
// local types are vmlinux.h-free, relocated with CO-RE against the
// kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define NF_DROP 0
#define NF_ACCEPT 1

struct net_device {
	int ifindex;
	unsigned int flags;
	unsigned int mtu;
	unsigned short type;
	char name[16];
} __attribute__((preserve_access_index));

struct sk_buff {
	unsigned int len;
	unsigned int data_len;
	unsigned short mac_len;
	unsigned short protocol;
	unsigned char pkt_type : 3;
	unsigned short transport_header;
	unsigned short network_header;
	unsigned short mac_header;
	unsigned int tail;
	unsigned int end;
	unsigned char *head;
	unsigned char *data;
	unsigned int truesize;
	unsigned int mark;
	unsigned int hash;
	struct net_device *dev;
	void *sk;
} __attribute__((preserve_access_index));

struct nf_hook_state {
	unsigned char hook;
	unsigned char pf;
	struct net_device *in;
	struct net_device *out;
	void *sk;
	void *net;
	void *okfn;
} __attribute__((preserve_access_index));

struct bpf_nf_ctx {
	const struct nf_hook_state *state;
	struct sk_buff *skb;
};

extern int bpf_dynptr_from_skb(struct __sk_buff *s, __u64 flags, struct bpf_dynptr *ptr__uninit) __ksym;
extern void *bpf_dynptr_slice(const struct bpf_dynptr *ptr, __u32 offset, void *buffer__opt, __u32 buffer__szk) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __always_inline void put(__u32 k, __u64 v)
{
	bpf_map_update_elem(&seen, &k, &v, 0);
}

static __always_inline __u64 dev_index(const struct net_device *d)
{
	return d ? (__u64)d->ifindex : 0xffff;
}

SEC("netfilter")
int nf_report(struct bpf_nf_ctx *ctx)
{
	const struct nf_hook_state *st = ctx->state;
	struct sk_buff *skb = ctx->skb;
	const struct net_device *dev = skb->dev;
	struct bpf_dynptr ptr;
	__u8 buf[20] = {}, *ip;

	put(0, st->hook);
	put(1, st->pf);
	put(2, dev_index(st->in));
	put(3, dev_index(st->out));
	put(4, (st->sk != 0) | (st->net != 0) << 1 | (st->okfn != 0) << 2);
	put(5, skb->len);
	put(6, skb->data_len);
	put(7, skb->protocol);
	put(8, BPF_CORE_READ_BITFIELD(skb, pkt_type));
	put(9, skb->data - skb->head);
	put(10, skb->network_header);
	put(11, skb->mac_header);
	put(12, skb->transport_header);
	put(13, skb->tail);
	put(14, skb->end);
	put(15, dev_index(dev));
	put(16, skb->truesize);
	put(17, skb->mac_len);
	put(18, skb->mark | (__u64)skb->hash << 32);
	put(19, skb->sk != 0);
	if (dev) {
		put(20, dev->mtu);
		put(21, dev->flags);
		put(22, dev->type);
		put(23, *(__u64 *)dev->name);
	}
	if (bpf_dynptr_from_skb((struct __sk_buff *)skb, 0, &ptr))
		return NF_ACCEPT;
	ip = bpf_dynptr_slice(&ptr, 0, buf, sizeof(buf));
	if (!ip) {
		put(24, 0xdead);
		return NF_ACCEPT;
	}
	put(24, ip[0] | ip[8] << 8 | ip[9] << 16 | (__u64)ip[7] << 24);
	switch (ip[0] >> 4) {
	case 4:
		return ip[8] & 1 ? NF_DROP : NF_ACCEPT;
	case 6:
		return ip[7] & 1 ? NF_DROP : NF_ACCEPT;
	}
	return NF_DROP;
}

char _license[] SEC("license") = "GPL";
