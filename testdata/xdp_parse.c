//go:build ignore

// xdp_parse.c is a realistic XDP parser without maps: Ethernet, up to two
// VLAN tags (802.1Q / 802.1ad), IPv4 (with options) or IPv6 (no extension
// headers), then TCP or UDP, each step bounds-checked against data_end.
//
// Verdicts:
//   - XDP_DROP (1): TCP destination port 23 (telnet) or UDP destination port
//     19 (chargen).
//   - XDP_ABORTED (0): a truncated Ethernet, VLAN, IP or L4 header, or an
//     IPv4 IHL below 5.
//   - XDP_PASS (2): everything else, including non-IP ethertypes, IPv4
//     fragments after the first, and other L4 protocols.
//
// Expected:
//   - Ethernet + IPv4 (IHL 5) + TCP to port 23          -> 1 (XDP_DROP)
//   - Ethernet + VLAN 100 + IPv6 + UDP to port 19       -> 1 (XDP_DROP)
//   - Ethernet + IPv4 + TCP to port 80                  -> 2 (XDP_PASS)
//   - Ethernet + IPv6 + UDP to port 53                  -> 2 (XDP_PASS)
//   - Ethernet + 802.1ad + 802.1Q + IPv4 + TCP to 23    -> 1 (XDP_DROP)
//   - Ethernet + IPv4 (fragment offset 16) + TCP to 23  -> 2 (XDP_PASS)
//   - Ethernet + IPv4 + ICMP                            -> 2 (XDP_PASS)
//   - ARP (ethertype 0x0806), any payload               -> 2 (XDP_PASS)
//   - Ethernet + IPv4 header cut after 10 bytes         -> 0 (XDP_ABORTED)
//   - Ethernet + IPv4 + TCP header cut after 10 bytes   -> 0 (XDP_ABORTED)
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_VLAN_DEPTH 2

// vlan_hdr follows the Ethernet header when h_proto is 802.1Q or 802.1ad.
struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

// cursor tracks the next unparsed byte of the packet.
struct cursor {
	void *pos;
	void *end;
};

static __always_inline int is_vlan(__be16 proto)
{
	return proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD);
}

// parse_eth returns the ethertype after any VLAN tags, or -1 if truncated.
static __always_inline int parse_eth(struct cursor *c)
{
	struct ethhdr *eth = c->pos;
	__be16 proto;

	if ((void *)(eth + 1) > c->end)
		return -1;
	c->pos = eth + 1;
	proto = eth->h_proto;

#pragma unroll
	for (int i = 0; i < MAX_VLAN_DEPTH; i++) {
		struct vlan_hdr *vh = c->pos;

		if (!is_vlan(proto))
			break;
		if ((void *)(vh + 1) > c->end)
			return -1;
		c->pos = vh + 1;
		proto = vh->encap_proto;
	}
	return bpf_ntohs(proto);
}

// parse_ipv4 returns the L4 protocol, -1 if truncated, or -2 for a non-first
// fragment (no L4 header to look at).
static __always_inline int parse_ipv4(struct cursor *c)
{
	struct iphdr *ip = c->pos;
	int hlen;

	if ((void *)(ip + 1) > c->end)
		return -1;
	hlen = ip->ihl * 4;
	if (hlen < (int)sizeof(*ip))
		return -1;
	if (c->pos + hlen > c->end)
		return -1;
	c->pos += hlen;
	if (ip->frag_off & bpf_htons(0x1fff))
		return -2;
	return ip->protocol;
}

// parse_ipv6 returns the next header, or -1 if truncated.
static __always_inline int parse_ipv6(struct cursor *c)
{
	struct ipv6hdr *ip6 = c->pos;

	if ((void *)(ip6 + 1) > c->end)
		return -1;
	c->pos = ip6 + 1;
	return ip6->nexthdr;
}

SEC("xdp")
int xdp_parse_entry(struct xdp_md *ctx)
{
	struct cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	int proto;

	switch (parse_eth(&c)) {
	case -1:
		return XDP_ABORTED;
	case ETH_P_IP:
		proto = parse_ipv4(&c);
		break;
	case ETH_P_IPV6:
		proto = parse_ipv6(&c);
		break;
	default:
		return XDP_PASS;
	}

	if (proto == -1)
		return XDP_ABORTED;

	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = c.pos;

		if ((void *)(tcp + 1) > c.end)
			return XDP_ABORTED;
		if (tcp->dest == bpf_htons(23))
			return XDP_DROP;
	} else if (proto == IPPROTO_UDP) {
		struct udphdr *udp = c.pos;

		if ((void *)(udp + 1) > c.end)
			return XDP_ABORTED;
		if (udp->dest == bpf_htons(19))
			return XDP_DROP;
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
