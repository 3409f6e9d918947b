//go:build ignore

// multi_call.c: a loop-free XDP program built from bpf-to-bpf calls, the
// way larger programs split their parsing and policy code: static
// __noinline subprograms that take packet pointers and a pointer to a
// struct on the caller's stack, call each other up to four frames deep,
// and a global (non-static) subprogram, which the kernel verifies once on
// its own with only its argument types known.
//
// main: parse() fills a struct pkt_meta (parse -> parse_l3 -> parse_v4 /
// parse_v6 -> parse_l4), policy() looks up the destination port in the
// `rules` hash map and combines it with the global score() of the metadata,
// and account() updates per-action counters in an array map. Returns
// XDP_PASS, XDP_DROP or XDP_TX as the rule says; short or unknown packets
// pass.
//
// For the verifier: 9 functions (the entry and 8 subprograms) with their
// own stacks, packet and stack pointers across calls, callee-saved
// registers, a global function with a PTR_TO_MEM-style argument, and the
// subprogram bodies verified again for each call site.
//
// Expected verdict: ACCEPTED.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct pkt_meta {
	__u32 l3_proto; // ETH_P_* (host order)
	__u32 l4_proto; // IPPROTO_*
	__u32 sport, dport;
	__u32 l4_off;
	__u32 ttl;
	__u32 len;
	__u32 flags;
};

#define F_TCP_SYN 1
#define F_FRAG 2
#define F_OPTIONS 4

struct rule {
	__u32 action;  // XDP_* verdict
	__u32 min_score;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} actions SEC(".maps");

static __noinline int parse_l4(void *l4, void *end, struct pkt_meta *m)
{
	if (m->l4_proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > end)
			return -1;
		m->sport = bpf_ntohs(tcp->source);
		m->dport = bpf_ntohs(tcp->dest);
		if (tcp->syn && !tcp->ack)
			m->flags |= F_TCP_SYN;
		return 0;
	}
	if (m->l4_proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > end)
			return -1;
		m->sport = bpf_ntohs(udp->source);
		m->dport = bpf_ntohs(udp->dest);
		return 0;
	}
	return 0; // other protocols: no ports
}

static __noinline int parse_v4(void *data, void *l3, void *end,
			       struct pkt_meta *m)
{
	struct iphdr *ip = l3;
	__u32 hlen;

	if ((void *)(ip + 1) > end)
		return -1;
	hlen = ip->ihl * 4;
	if (hlen < sizeof(*ip))
		return -1;
	if (hlen > sizeof(*ip))
		m->flags |= F_OPTIONS;
	if (ip->frag_off & bpf_htons(0x1fff))
		m->flags |= F_FRAG;
	m->l4_proto = ip->protocol;
	m->ttl = ip->ttl;
	m->l4_off = (l3 - data) + hlen;
	if (m->flags & F_FRAG)
		return 0;
	return parse_l4(l3 + hlen, end, m);
}

static __noinline int parse_v6(void *data, void *l3, void *end,
			       struct pkt_meta *m)
{
	struct ipv6hdr *ip6 = l3;

	if ((void *)(ip6 + 1) > end)
		return -1;
	m->l4_proto = ip6->nexthdr;
	m->ttl = ip6->hop_limit;
	m->l4_off = (l3 - data) + sizeof(*ip6);
	return parse_l4(ip6 + 1, end, m);
}

static __noinline int parse_l3(void *data, void *end, struct pkt_meta *m)
{
	void *l3 = data + sizeof(struct ethhdr);

	if (m->l3_proto == ETH_P_IP)
		return parse_v4(data, l3, end, m);
	if (m->l3_proto == ETH_P_IPV6)
		return parse_v6(data, l3, end, m);
	return 1; // not IP
}

static __noinline int parse(struct xdp_md *ctx, struct pkt_meta *m)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return -1;
	m->l3_proto = bpf_ntohs(eth->h_proto);
	m->len = end - data;
	return parse_l3(data, end, m);
}

// score is a global function: verified once, on its own, for any
// pkt_meta. Higher is more suspicious.
__noinline int score(const struct pkt_meta *m)
{
	int s = 0;

	if (!m)
		return 0;
	if (m->flags & F_FRAG)
		s += 40;
	if (m->flags & F_OPTIONS)
		s += 20;
	if (m->flags & F_TCP_SYN)
		s += 10;
	if (m->ttl < 4)
		s += 30;
	if (m->len < 64)
		s += 5;
	return s;
}

static __noinline __u32 policy(const struct pkt_meta *m)
{
	struct rule *r;
	__u32 port = m->dport;

	r = bpf_map_lookup_elem(&rules, &port);
	if (!r)
		return XDP_PASS;
	if (r->action > XDP_TX)
		return XDP_ABORTED;
	if (score(m) < r->min_score)
		return XDP_PASS;
	return r->action;
}

static __noinline void account(__u32 action)
{
	__u64 *c = bpf_map_lookup_elem(&actions, &action);

	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("xdp")
int multi_call(struct xdp_md *ctx)
{
	struct pkt_meta m = {};
	__u32 action;
	int err;

	err = parse(ctx, &m);
	if (err < 0) {
		account(XDP_PASS);
		return XDP_PASS;
	}
	action = err > 0 ? XDP_PASS : policy(&m);
	account(action);
	return action;
}

char _license[] SEC("license") = "GPL";
