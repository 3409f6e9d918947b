// SPDX-License-Identifier: MIT
// The programs of the migration example, written in the style of
// cilium/ebpf's examples (xdp, ringbuffer, tcx): an XDP program counting
// packets per IPv4 source in an LRU hash and sending an event per packet
// to a ring buffer, and a tc program counting packets in an array and
// sending an event per packet to a perf event array.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_MAP_ENTRIES 16

struct event {
	__u32 saddr; // network byte order
	__u32 len;
};

// Force emitting struct event into the ELF, for bpf2go's -type event.
const struct event *unused __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_MAP_ENTRIES);
	__type(key, __u32);   // source IPv4 address
	__type(value, __u32); // packet count
} xdp_stats_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 12);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pkt_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf_events SEC(".maps");

// parse_ip_src_addr returns the IPv4 source address of an Ethernet frame
// in network byte order, 0 if it has none.
static __always_inline __u32 parse_ip_src_addr(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > data_end)
		return 0;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	return ip->saddr;
}

SEC("xdp")
int xdp_prog_func(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct event e = {};
	__u32 ip, init = 1, *count;

	ip = parse_ip_src_addr(data, data_end);
	if (!ip)
		return XDP_PASS;
	count = bpf_map_lookup_elem(&xdp_stats_map, &ip);
	if (count)
		__sync_fetch_and_add(count, 1);
	else
		bpf_map_update_elem(&xdp_stats_map, &ip, &init, BPF_ANY);

	e.saddr = ip;
	e.len = data_end - data;
	bpf_ringbuf_output(&events, &e, sizeof(e), 0);
	return XDP_PASS;
}

SEC("tc")
int ingress_prog_func(struct __sk_buff *skb)
{
	struct event e = {};
	__u32 key = 0;
	__u64 *count;

	count = bpf_map_lookup_elem(&pkt_count, &key);
	if (count)
		__sync_fetch_and_add(count, 1);
	e.saddr = parse_ip_src_addr((void *)(long)skb->data, (void *)(long)skb->data_end);
	e.len = skb->len;
	bpf_perf_event_output(skb, &perf_events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	return TC_ACT_OK;
}

char __license[] SEC("license") = "Dual MIT/GPL";
