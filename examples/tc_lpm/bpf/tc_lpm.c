//go:build ignore

// tc_lpm.c: a tc ingress policy. The destination of each IPv4 packet is
// looked up in an LPM trie of CIDRs; a denied one is dropped and reported
// through a perf event array. The others are routed with bpf_fib_lookup:
// forwarded out of the route's device with the neighbour's addresses when
// the lookup succeeds, passed to the stack (and reported) otherwise.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

struct cidr {
	__u32 prefixlen;
	__u8 addr[4];
};

enum { ALLOW = 0, DENY = 1 };

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct cidr);
	__type(value, __u32);
} policy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

/* An event: why a packet was not forwarded. reason is 0 for a denied
 * destination, 1 + bpf_fib_lookup's result otherwise. */
struct event {
	__u32 saddr, daddr;
	__u32 reason;
	__u32 len;
};

SEC("tc")
int tc_lpm(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {};
	struct event ev = {};
	struct cidr key = {.prefixlen = 32};
	__u32 *action;
	long rc;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	ev.saddr = ip->saddr;
	ev.daddr = ip->daddr;
	ev.len = skb->len;
	__builtin_memcpy(key.addr, &ip->daddr, 4);
	action = bpf_map_lookup_elem(&policy, &key);
	if (action && *action == DENY) {
		ev.reason = 0;
		bpf_perf_event_output(skb, &events, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
		return TC_ACT_SHOT;
	}

	fib.family = 2; /* AF_INET */
	fib.tos = ip->tos;
	fib.l4_protocol = ip->protocol;
	fib.tot_len = bpf_ntohs(ip->tot_len);
	fib.ipv4_src = ip->saddr;
	fib.ipv4_dst = ip->daddr;
	fib.ifindex = skb->ifindex;
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS) {
		ev.reason = 1 + rc;
		bpf_perf_event_output(skb, &events, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
		return TC_ACT_OK;
	}
	if ((void *)(ip + 1) > (void *)(long)skb->data_end)
		return TC_ACT_SHOT;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect(fib.ifindex, 0);
}
