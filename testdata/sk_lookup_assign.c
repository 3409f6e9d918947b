//go:build ignore

// sk_lookup_assign.c exercises sk_lookup's bpf_sk_assign on sockets of a
// sockmap, to compare bpfvm's (given the sockets' descriptions) with the
// kernel's test run (given this machine's sockets).
//
// assign reads a request from req[0]: a first socket (a sockmap key; an
// empty slot is NULL) with the flags to assign it with, and, when two is
// set, a second one and its flags. It stores both results in out[0] with
// what ctx->sk then shows (its family, protocol and port), and returns
// SK_PASS.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

struct req {
	__u32 key1, two;
	__u64 flags1;
	__u32 key2, pad;
	__u64 flags2;
};

struct res {
	__s64 err1, err2;
	__u32 selected, family, protocol, port;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct req);
} req SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct res);
} out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} socks SEC(".maps");

static __always_inline long assign_key(struct bpf_sk_lookup *ctx, __u32 key, __u64 flags)
{
	struct bpf_sock *sk = bpf_map_lookup_elem(&socks, &key);
	long err;

	if (!sk)
		return bpf_sk_assign(ctx, NULL, flags);
	err = bpf_sk_assign(ctx, sk, flags);
	bpf_sk_release(sk);
	return err;
}

SEC("sk_lookup")
int assign(struct bpf_sk_lookup *ctx)
{
	__u32 zero = 0;
	struct req *q = bpf_map_lookup_elem(&req, &zero);
	struct res *o = bpf_map_lookup_elem(&out, &zero);
	struct bpf_sock *sk;

	if (!q || !o)
		return SK_DROP;
	o->err1 = assign_key(ctx, q->key1, q->flags1);
	o->err2 = 0;
	if (q->two)
		o->err2 = assign_key(ctx, q->key2, q->flags2);
	sk = ctx->sk;
	o->selected = sk != 0;
	o->family = sk ? sk->family : 0;
	o->protocol = sk ? sk->protocol : 0;
	o->port = sk ? sk->src_port : 0;
	return SK_PASS;
}
