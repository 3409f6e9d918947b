// SPDX-License-Identifier: MIT
// xdp_filter drops IPv4 TCP and UDP packets to a configured port and counts
// what it sees. The port lives in .rodata (set it before loading), the
// counters in .bss: both are global data, loaded as single-entry arrays.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

const volatile __u16 blocked_port = 23;

__u64 packets_seen;
__u64 packets_dropped;

static __always_inline int port_of(void *l4, void *data_end, __u8 proto, __u16 *port)
{
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;
		if ((void *)(tcp + 1) > data_end)
			return -1;
		*port = bpf_ntohs(tcp->dest);
		return 0;
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;
		if ((void *)(udp + 1) > data_end)
			return -1;
		*port = bpf_ntohs(udp->dest);
		return 0;
	}
	return -1;
}

SEC("xdp")
int xdp_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__u16 port;

	__sync_fetch_and_add(&packets_seen, 1);
	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return XDP_ABORTED;
	if (ip->ihl < 5)
		return XDP_DROP;
	if (port_of((void *)ip + ip->ihl * 4, data_end, ip->protocol, &port) < 0)
		return XDP_PASS;
	if (port == blocked_port) {
		__sync_fetch_and_add(&packets_dropped, 1);
		return XDP_DROP;
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
