//go:build ignore

// lb_tc.c: a loop-free tc L3/L4 load balancer, shaped like the
// connection-tracking balancers that run at the tc hook.
//
// For IPv4 TCP or UDP packets (Ethernet, optionally one 802.1Q tag, IPv4
// header with options) whose destination address, port and protocol are a
// virtual service in the `vips` hash map, it picks a backend — the one the
// flow already uses from the `flows` LRU hash, or else hash(5-tuple) modulo
// the service's backend count, an index into the `backends` array — records
// the flow, rewrites the destination address and port with
// bpf_skb_store_bytes and fixes the IPv4 and TCP/UDP checksums with
// bpf_l3_csum_replace / bpf_l4_csum_replace. Per-CPU counters count
// packets per outcome. Packets that are not for a service pass unchanged.
//
// For the verifier: a variable-length IPv4 header (the L4 header's offset
// is a bounded variable), map lookups with null checks, a map value used as
// an array index, helpers that invalidate packet pointers (the program
// re-derives them from offsets afterwards), and a few dozen branches.
//
// Expected verdict: ACCEPTED.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define MAX_BACKENDS 64
#define ETH_P_8021Q_ 0x8100

struct vip_key {
	__u32 addr;
	__u16 port;
	__u8 proto;
	__u8 pad;
};

struct vip_info {
	__u32 first;   // first backend index in `backends`
	__u32 count;   // number of backends, 1..MAX_BACKENDS
	__u32 flags;
};

struct backend {
	__u32 addr;
	__u16 port;
	__u16 weight;
};

struct flow_key {
	__u32 saddr, daddr;
	__u16 sport, dport;
	__u8 proto;
	__u8 pad[3];
};

enum counter { C_PASS, C_NEW, C_KNOWN, C_NO_BACKEND, C_REWRITE_ERR, C_MAX };

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct vip_key);
	__type(value, struct vip_info);
} vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct backend);
} backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, __u32);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

static __always_inline __u32 rotl(__u32 v, int n)
{
	return (v << n) | (v >> (32 - n));
}

// A small avalanche hash of the 5-tuple (murmur3-style finalizer rounds).
static __always_inline __u32 flow_hash(const struct flow_key *k)
{
	__u32 h = 0x2545f491u;

	h ^= k->saddr;
	h = rotl(h, 13) * 5 + 0xe6546b64u;
	h ^= k->daddr;
	h = rotl(h, 13) * 5 + 0xe6546b64u;
	h ^= ((__u32)k->sport << 16) | k->dport;
	h = rotl(h, 13) * 5 + 0xe6546b64u;
	h ^= k->proto;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

SEC("tc")
int lb_ingress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct flow_key fk = {};
	struct vip_key vk = {};
	struct vip_info *vip;
	struct backend *be;
	__u32 l3_off = sizeof(*eth), l4_off, idx, *known;
	__u16 proto;
	__u16 *ports;
	int csum_off;
	__u64 l4_flags;

	if ((void *)(eth + 1) > data_end)
		goto pass;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021Q_)) {
		__u16 *inner = (void *)(eth + 1);

		if ((void *)(inner + 2) > data_end)
			goto pass;
		proto = inner[1];
		l3_off += 4;
	}
	if (proto != bpf_htons(ETH_P_IP))
		goto pass;

	ip = data + l3_off;
	if ((void *)(ip + 1) > data_end)
		goto pass;
	if (ip->ihl < 5 || ip->version != 4)
		goto pass;
	if (ip->frag_off & bpf_htons(0x3fff)) // fragments: no ports
		goto pass;
	l4_off = l3_off + ip->ihl * 4;
	ports = data + l4_off;
	if ((void *)(ports + 2) > data_end)
		goto pass;

	fk.saddr = ip->saddr;
	fk.daddr = ip->daddr;
	fk.sport = ports[0];
	fk.dport = ports[1];
	fk.proto = ip->protocol;
	switch (fk.proto) {
	case IPPROTO_TCP:
		csum_off = offsetof(struct tcphdr, check);
		l4_flags = 0;
		break;
	case IPPROTO_UDP:
		// A zero UDP checksum means "none" and must stay zero.
		csum_off = offsetof(struct udphdr, check);
		l4_flags = BPF_F_MARK_MANGLED_0;
		break;
	default:
		goto pass;
	}

	vk.addr = fk.daddr;
	vk.port = fk.dport;
	vk.proto = fk.proto;
	vip = bpf_map_lookup_elem(&vips, &vk);
	if (!vip)
		goto pass;
	if (vip->count == 0 || vip->count > MAX_BACKENDS) {
		count(C_NO_BACKEND);
		return TC_ACT_SHOT;
	}

	known = bpf_map_lookup_elem(&flows, &fk);
	if (known && *known - vip->first < vip->count) {
		idx = *known;
		count(C_KNOWN);
	} else {
		idx = vip->first + flow_hash(&fk) % vip->count;
		bpf_map_update_elem(&flows, &fk, &idx, BPF_ANY);
		count(C_NEW);
	}
	be = bpf_map_lookup_elem(&backends, &idx);
	if (!be || be->addr == 0) {
		count(C_NO_BACKEND);
		return TC_ACT_SHOT;
	}

	// Rewrite: these helpers may move the packet, so from here on only
	// offsets are used.
	__u32 new_addr = be->addr;
	__u16 new_port = be->port;

	if (bpf_l4_csum_replace(skb, l4_off + csum_off, fk.daddr, new_addr,
				l4_flags | BPF_F_PSEUDO_HDR | sizeof(new_addr)) ||
	    bpf_l4_csum_replace(skb, l4_off + csum_off, fk.dport, new_port,
				l4_flags | sizeof(new_port)) ||
	    bpf_l3_csum_replace(skb, l3_off + offsetof(struct iphdr, check),
				fk.daddr, new_addr, sizeof(new_addr)) ||
	    bpf_skb_store_bytes(skb, l3_off + offsetof(struct iphdr, daddr),
				&new_addr, sizeof(new_addr), 0) ||
	    bpf_skb_store_bytes(skb, l4_off + 2, &new_port, sizeof(new_port),
				0)) {
		count(C_REWRITE_ERR);
		return TC_ACT_SHOT;
	}
	return TC_ACT_OK;

pass:
	count(C_PASS);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
