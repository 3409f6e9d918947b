// SPDX-License-Identifier: MIT
// xdp_counter counts packets and bytes per IPv4 source address and drops
// packets from addresses on a block list that user space fills.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct stats {
	__u64 packets;
	__u64 bytes;
	__u64 dropped;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);   // IPv4 source address, network byte order
	__type(value, __u8);  // present = blocked
} blocklist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct stats);
} counters SEC(".maps");

SEC("xdp")
int xdp_counter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct stats *s, fresh = {};
	__u32 saddr;
	int blocked;

	if ((void *)(ip + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	saddr = ip->saddr;
	blocked = bpf_map_lookup_elem(&blocklist, &saddr) != NULL;

	s = bpf_map_lookup_elem(&counters, &saddr);
	if (!s) {
		bpf_map_update_elem(&counters, &saddr, &fresh, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&counters, &saddr);
		if (!s)
			return XDP_ABORTED;
	}
	__sync_fetch_and_add(&s->packets, 1);
	__sync_fetch_and_add(&s->bytes, data_end - data);
	if (blocked) {
		__sync_fetch_and_add(&s->dropped, 1);
		return XDP_DROP;
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
