//go:build ignore

// helpers_netmaps.c exercises the cgroup and socket map types' helpers.
// The cgroup_skb and tc programs run on bpfvm and in the kernel's test
// run; the sk_skb, sk_msg, sock_ops and sk_reuseport ones on bpfvm only
// (the kernel cannot test-run their types).
//
// Programs that take an argument read it from skb->cb[0] (tc, cgroup_skb)
// and results go to out[0].
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_STORAGE);
	__type(key, struct bpf_cgroup_storage_key);
	__type(value, __u64);
} cgstore SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE);
	__type(key, struct bpf_cgroup_storage_key);
	__type(value, __u64);
} pcgstore SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} skstore SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} socksh SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_REUSEPORT_SOCKARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} reuse SEC(".maps");

static void put(__u64 v)
{
	__u32 k = 0;
	__u64 *o = bpf_map_lookup_elem(&out, &k);

	if (o)
		*o = v;
}

// storage_count counts its runs in the cgroup storage and its per-CPU
// twin: out[0] is the shared count, the per-CPU one in the high half.
SEC("cgroup_skb/egress")
int storage_count(struct __sk_buff *skb)
{
	__u64 *v = bpf_get_local_storage(&cgstore, 0);
	__u64 *p = bpf_get_local_storage(&pcgstore, 0);

	*v += 1;
	*p += 1;
	put(*v | *p << 32);
	return 1;
}

// skb_under returns bpf_skb_under_cgroup(skb, &cgroups, cb[0]).
SEC("tc")
int skb_under(struct __sk_buff *skb)
{
	return bpf_skb_under_cgroup(skb, &cgroups, skb->cb[0]);
}

// task_under returns bpf_current_task_under_cgroup(&cgroups, cb[0]).
SEC("tc")
int task_under(struct __sk_buff *skb)
{
	return bpf_current_task_under_cgroup(&cgroups, skb->cb[0]);
}

// sk_storage counts the runs on the packet's socket in its storage
// (created with cb[0] as BPF_SK_STORAGE_GET_F_CREATE), into out[0]; with
// cb[1] set it deletes the storage and returns what the delete did.
SEC("cgroup_skb/egress")
int sk_storage(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	__u64 *v;

	if (!sk)
		return 0;
	if (skb->cb[1]) {
		put(bpf_sk_storage_delete(&skstore, sk));
		return 1;
	}
	v = bpf_sk_storage_get(&skstore, sk, 0, skb->cb[0]);
	if (!v) {
		put(-1);
		return 1;
	}
	*v += 1;
	put(*v);
	return 1;
}

// sock_storage counts the runs on the cgroup_sock program's socket, its
// context, in its storage, into out[0].
SEC("cgroup/sock_create")
int sock_storage(struct bpf_sock *sk)
{
	__u64 *v = bpf_sk_storage_get(&skstore, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	if (!v)
		return 0;
	*v += 1;
	put(*v);
	return 1;
}

// sk_update puts the packet's socket in socks[cb[0]] with flags cb[1]
// and returns what the update did; with cb[2] set it deletes
// socks[cb[0]] instead.
SEC("tc")
int sk_update(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	__u32 k = skb->cb[0];

	if (skb->cb[2])
		return bpf_map_delete_elem(&socks, &k);
	if (!sk)
		return -1;
	return bpf_map_update_elem(&socks, &k, sk, skb->cb[1]);
}

// percpu_elem returns CPU cb[0]'s value of pcpu[0], -1 when there is none.
SEC("tc")
int percpu_elem(struct __sk_buff *skb)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_percpu_elem(&pcpu, &k, skb->cb[0]);

	if (!v)
		return -1;
	return *v;
}

// sk_redirect sends the packet to socks[0] (flags from the packet's first
// byte) and returns the verdict.
SEC("sk_skb/stream_verdict")
int sk_redirect(struct __sk_buff *skb)
{
	__u8 *d = (void *)(long)skb->data;

	if ((void *)(d + 1) > (void *)(long)skb->data_end)
		return SK_DROP;
	return bpf_sk_redirect_map(skb, &socks, 0, d[0]);
}

// sk_redirect_hash sends the packet to socksh[1].
SEC("sk_skb/stream_verdict")
int sk_redirect_hash(struct __sk_buff *skb)
{
	__u32 k = 1;

	return bpf_sk_redirect_hash(skb, &socksh, &k, BPF_F_INGRESS);
}

// msg_redirect sends the message to socks[2], msg_redirect_hash to
// socksh[1].
SEC("sk_msg")
int msg_redirect(struct sk_msg_md *msg)
{
	return bpf_msg_redirect_map(msg, &socks, 2, 0);
}

SEC("sk_msg")
int msg_redirect_hash(struct sk_msg_md *msg)
{
	__u32 k = 1;

	return bpf_msg_redirect_hash(msg, &socksh, &k, 0);
}

// sock_update puts the program's socket in socks[3] and socksh[3]; the
// result of the sockmap's update is in args[0] (sock_ops' reply).
SEC("sockops")
int sock_update(struct bpf_sock_ops *ops)
{
	__u32 k = 3;

	ops->reply = bpf_sock_map_update(ops, &socks, &k, BPF_NOEXIST);
	bpf_sock_hash_update(ops, &socksh, &k, BPF_ANY);
	return 1;
}

// select picks reuse[1].
SEC("sk_reuseport")
int select(struct sk_reuseport_md *md)
{
	__u32 k = 1;

	return bpf_sk_select_reuseport(md, &reuse, &k, 0) == 0 ? SK_PASS : SK_DROP;
}

char _license[] SEC("license") = "GPL";
