//go:build ignore

// helpers_redirect.c exercises bpf_redirect_map. bpfvm has no devmap, so
// the target map is a hash (which the kernel's verifier would refuse for
// bpf_redirect_map): this object runs on bpfvm only.
//
// redirect_map and tc_redirect_map call bpf_redirect_map(&ports, key,
// flags) with key and flags from the packet (after the Ethernet header)
// and return its result.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

struct args {
	__u32 key;
	__u32 flags;
};

SEC("xdp")
int redirect_map(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct args *a = data + 14;

	if ((void *)(a + 1) > end)
		return -1;
	return bpf_redirect_map(&ports, a->key, a->flags);
}

SEC("tc")
int tc_redirect_map(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct args *a = data + 14;

	if ((void *)(a + 1) > end)
		return -1;
	return bpf_redirect_map(&ports, a->key, a->flags);
}

char _license[] SEC("license") = "GPL";
