//go:build ignore

// helpers_sock.c exercises the socket lookups and bpf_fib_lookup against
// the host's world, to compare bpfvm's (given the same sockets, routes and
// neighbours) with the kernel's (this machine's).
//
// tc_lookup and xdp_lookup (bpf_sk_lookup_tcp, bpf_sk_lookup_udp),
// tc_skc_lookup and xdp_skc_lookup (bpf_skc_lookup_tcp) read a request
// after the Ethernet header (struct req: the helper, the tuple's size,
// netns_id, flags, the tuple), call the lookup, then bpf_tcp_sock, bpf_get_listener_sock and
// bpf_sk_fullsock on what it found, and store what they show of the
// socket in out[0]; they return whether a socket was found.
//
// tc_fib and xdp_fib read a struct bpf_fib_lookup, a size and flags after
// the Ethernet header, call bpf_fib_lookup and store the params it left
// in fib[0]; they return its result.
//
// tc_sk_assign assigns the socket it looks up to the packet.
//
// tc_sockmap_lookup looks a socket up in a sockmap (the request's helper
// 0) or a sockhash (1) at the request's size as the key, and stores what
// it shows in out[0] as tc_lookup: bpf_map_lookup_elem's referenced socket.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

struct req {
	__u32 helper; /* 0 sk_lookup_tcp, 1 sk_lookup_udp (the skc programs: bpf_skc_lookup_tcp) */
	__u32 size;   /* 12, 36, 0 or another (20) */
	__u64 netns;
	__u64 flags;
	struct bpf_sock_tuple tuple;
};

struct out {
	__u32 found;
	__u32 bound_dev_if, family, type, protocol, mark, priority;
	__u32 src_ip4, src_ip6[4], src_port, dst_port, dst_ip4, dst_ip6[4];
	__u32 state, rx_queue_mapping;
	__u32 tcp, listener, listener_port, full;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct out);
} out SEC(".maps");

struct fibreq {
	struct bpf_fib_lookup params;
	__u32 plen;
	__u32 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_fib_lookup);
} fib SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} sockets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} socketsh SEC(".maps");

#define LOOKUP(fn, ctx, r, n) fn(ctx, &(r)->tuple, n, (r)->netns, (r)->flags)

/* lookup calls bpf_sk_lookup_tcp or, for helper 1, bpf_sk_lookup_udp. */
static __always_inline struct bpf_sock *
lookup(void *ctx, struct req *r)
{
	if (r->helper == 1) {
		switch (r->size) {
		case 12: return LOOKUP(bpf_sk_lookup_udp, ctx, r, 12);
		case 36: return LOOKUP(bpf_sk_lookup_udp, ctx, r, 36);
		default: return LOOKUP(bpf_sk_lookup_udp, ctx, r, 20);
		}
	}
	switch (r->size) {
	case 12: return LOOKUP(bpf_sk_lookup_tcp, ctx, r, 12);
	case 36: return LOOKUP(bpf_sk_lookup_tcp, ctx, r, 36);
	case 0: return LOOKUP(bpf_sk_lookup_tcp, ctx, r, 0);
	default: return LOOKUP(bpf_sk_lookup_tcp, ctx, r, 20);
	}
}

/* skc_lookup calls bpf_skc_lookup_tcp: a program calls one or the other,
 * as the kernel's verifier refuses loads from sock and sock_common
 * pointers by one instruction. */
static __always_inline struct bpf_sock *
skc_lookup(void *ctx, struct req *r)
{
	switch (r->size) {
	case 12: return (struct bpf_sock *)LOOKUP(bpf_skc_lookup_tcp, ctx, r, 12);
	case 36: return (struct bpf_sock *)LOOKUP(bpf_skc_lookup_tcp, ctx, r, 36);
	default: return (struct bpf_sock *)LOOKUP(bpf_skc_lookup_tcp, ctx, r, 20);
	}
}

/* show stores what sk shows in out[0] and releases it; casts calls
 * bpf_sk_fullsock, bpf_tcp_sock and bpf_get_listener_sock on it (tc: XDP
 * has none of them). */
static __always_inline int
show(struct bpf_sock *sk, const int casts)
{
	__u32 zero = 0;
	struct out *o = bpf_map_lookup_elem(&out, &zero);
	struct bpf_sock *l, *f;
	struct bpf_tcp_sock *tp;

	if (!o) {
		bpf_sk_release(sk);
		return -1;
	}
	o->found = 1;
	o->bound_dev_if = sk->bound_dev_if;
	o->family = sk->family;
	o->src_ip4 = sk->src_ip4;
	o->src_ip6[0] = sk->src_ip6[0];
	o->src_ip6[1] = sk->src_ip6[1];
	o->src_ip6[2] = sk->src_ip6[2];
	o->src_ip6[3] = sk->src_ip6[3];
	o->src_port = sk->src_port;
	o->dst_port = sk->dst_port;
	o->dst_ip4 = sk->dst_ip4;
	o->dst_ip6[0] = sk->dst_ip6[0];
	o->dst_ip6[1] = sk->dst_ip6[1];
	o->dst_ip6[2] = sk->dst_ip6[2];
	o->dst_ip6[3] = sk->dst_ip6[3];
	o->state = sk->state;
	o->rx_queue_mapping = sk->rx_queue_mapping;
	if (!casts) {
		bpf_sk_release(sk);
		return 1;
	}
	f = bpf_sk_fullsock(sk);
	if (f) {
		o->full = 1;
		o->type = f->type;
		o->protocol = f->protocol;
		o->mark = f->mark;
		o->priority = f->priority;
	}
	tp = bpf_tcp_sock(sk);
	if (tp)
		o->tcp = 1;
	l = bpf_get_listener_sock(sk);
	if (l) {
		o->listener = 1;
		o->listener_port = l->src_port;
	}
	bpf_sk_release(sk);
	return 1;
}

static __always_inline int
clear_out(void)
{
	__u32 zero = 0;
	struct out *o = bpf_map_lookup_elem(&out, &zero);

	if (!o)
		return -1;
	__builtin_memset(o, 0, sizeof(*o));
	return 0;
}

static __always_inline int
skb_req(struct __sk_buff *skb, struct req *r)
{
	return bpf_skb_load_bytes(skb, 14, r, sizeof(*r));
}

static __always_inline int
xdp_req(struct xdp_md *ctx, struct req *r)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (data + 14 + sizeof(*r) > end)
		return -1;
	__builtin_memcpy(r, data + 14, sizeof(*r));
	return 0;
}

#define LOOKUP_PROG(sec, name, ctxtype, get, fn, casts)		\
	SEC(sec)							\
	int name(ctxtype *ctx)						\
	{								\
		struct bpf_sock *sk;					\
		struct req r;						\
									\
		if (get(ctx, &r) || clear_out())			\
			return -1;					\
		sk = fn(ctx, &r);					\
		if (!sk)						\
			return 0;					\
		return show(sk, casts);					\
	}

LOOKUP_PROG("tc", tc_lookup, struct __sk_buff, skb_req, lookup, 1)
LOOKUP_PROG("tc", tc_skc_lookup, struct __sk_buff, skb_req, skc_lookup, 1)
LOOKUP_PROG("xdp", xdp_lookup, struct xdp_md, xdp_req, lookup, 0)
LOOKUP_PROG("xdp", xdp_skc_lookup, struct xdp_md, xdp_req, skc_lookup, 0)

static __always_inline int
fiblookup(void *ctx, struct fibreq *q)
{
	__u32 zero = 0;
	struct bpf_fib_lookup *p = bpf_map_lookup_elem(&fib, &zero);
	int rc;

	if (!p)
		return -1000;
	__builtin_memcpy(p, &q->params, sizeof(*p));
	if (q->plen == 64)
		rc = bpf_fib_lookup(ctx, p, 64, q->flags);
	else
		rc = bpf_fib_lookup(ctx, p, 32, q->flags);
	return rc;
}

SEC("tc")
int tc_fib(struct __sk_buff *skb)
{
	struct fibreq q;

	if (bpf_skb_load_bytes(skb, 14, &q, sizeof(q)))
		return -1000;
	return fiblookup(skb, &q);
}

SEC("xdp")
int xdp_fib(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct fibreq q;

	if (data + 14 + sizeof(q) > end)
		return -1000;
	__builtin_memcpy(&q, data + 14, sizeof(q));
	return fiblookup(ctx, &q);
}

SEC("tc")
int tc_netns_cookie(struct __sk_buff *skb)
{
	__u64 a = bpf_get_netns_cookie(skb), b = bpf_get_netns_cookie(0);
	__u32 zero = 0;
	struct out *o = bpf_map_lookup_elem(&out, &zero);

	if (!o)
		return -1;
	__builtin_memset(o, 0, sizeof(*o));
	o->src_ip6[0] = a;
	o->src_ip6[1] = a >> 32;
	o->dst_ip6[0] = b;
	o->dst_ip6[1] = b >> 32;
	return a == b;
}

/* tc_sk_assign looks the request's socket up (without flags) and assigns
 * it to the packet with the request's flags: bpf_sk_assign's result, 1000
 * when nothing was found. */
SEC("tc")
int tc_sk_assign(struct __sk_buff *skb)
{
	struct bpf_sock *sk;
	struct req r;
	__u64 flags;
	long ret;

	if (skb_req(skb, &r))
		return -1;
	flags = r.flags;
	r.flags = 0;
	sk = lookup(skb, &r);
	if (!sk)
		return 1000;
	ret = bpf_sk_assign(skb, sk, flags);
	bpf_sk_release(sk);
	return ret;
}

SEC("tc")
int tc_sockmap_lookup(struct __sk_buff *skb)
{
	struct bpf_sock *sk;
	struct req r;
	__u32 key;

	if (skb_req(skb, &r) || clear_out())
		return -1;
	key = r.size;
	if (r.helper == 1)
		sk = bpf_map_lookup_elem(&socketsh, &key);
	else
		sk = bpf_map_lookup_elem(&sockets, &key);
	if (!sk)
		return 0;
	return show(sk, 1);
}
