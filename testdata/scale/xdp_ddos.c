//go:build ignore

// xdp_ddos.c: a loop-free XDP DDoS filter with several maps, shaped like the
// drop-early filters run in front of services.
//
// It parses Ethernet with up to two VLAN tags, then IPv4 (with options) or
// IPv6 (no extension headers), then TCP, UDP or ICMP/ICMPv6, and decides:
//   - a source address in the `deny4`/`deny6` hash maps: drop;
//   - IPv4 fragments other than the first, or a TCP packet with SYN and FIN
//     (or no flags at all): drop;
//   - per-source token bucket in the `buckets` LRU hash (refilled at
//     `config.rate` tokens per second up to `config.burst`, with
//     bpf_ktime_get_ns): drop when empty; UDP packets to a port listed in
//     `amp_ports` (DNS, NTP, memcached amplification) cost
//     `config.amp_cost` tokens, others one;
//   - otherwise pass.
// Every verdict and reason is counted in the `stats` per-CPU array, and
// dropped bytes per source in the `dropped` per-CPU hash.
//
// For the verifier: two VLAN levels and two IP versions multiply the header
// offsets the verifier has to track, seven maps of five types, map values
// read and written through pointers, and arithmetic on bounded scalars.
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

#define ETH_P_8021Q_ 0x8100
#define ETH_P_8021AD_ 0x88a8
#define NSEC 1000000000ull

// The first bytes of ICMP and ICMPv6 headers (linux/icmp.h drags in libc
// headers that do not build for the BPF target).
struct icmp_head {
	__u8 type;
	__u8 code;
	__u16 checksum;
	__u32 rest;
};

enum reason {
	R_PASS, R_DENY, R_FRAG, R_BAD_TCP, R_RATE, R_NOT_IP, R_TRUNC, R_MAX
};

struct config {
	__u64 rate;     // tokens per second
	__u64 burst;    // bucket size
	__u64 amp_cost; // tokens per packet to an amplification port
};

struct bucket {
	__u64 tokens;
	__u64 last_ns;
};

struct src_key {
	__u32 family;
	__u32 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} deny4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct in6_addr);
	__type(value, __u8);
} deny6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u8);
} amp_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 100000);
	__type(key, struct src_key);
	__type(value, struct bucket);
} buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, R_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 10000);
	__type(key, struct src_key);
	__type(value, __u64);
} dropped SEC(".maps");

static __always_inline int verdict(enum reason r)
{
	__u32 k = r;
	__u64 *c = bpf_map_lookup_elem(&stats, &k);

	if (c)
		*c += 1;
	return r == R_PASS || r == R_NOT_IP || r == R_TRUNC ? XDP_PASS : XDP_DROP;
}

static __always_inline int drop_src(const struct src_key *src, __u64 bytes,
				    enum reason r)
{
	__u64 *d = bpf_map_lookup_elem(&dropped, src);

	if (d)
		*d += bytes;
	else
		bpf_map_update_elem(&dropped, src, &bytes, BPF_NOEXIST);
	return verdict(r);
}

// take removes cost tokens from the source's bucket, creating it full.
static __always_inline int take(const struct src_key *src, __u64 cost)
{
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct bucket *b, fresh;
	__u64 now = bpf_ktime_get_ns(), add;

	if (!cfg || cfg->rate == 0)
		return 1;
	b = bpf_map_lookup_elem(&buckets, src);
	if (!b) {
		fresh.tokens = cfg->burst > cost ? cfg->burst - cost : 0;
		fresh.last_ns = now;
		bpf_map_update_elem(&buckets, src, &fresh, BPF_ANY);
		return cfg->burst >= cost;
	}
	if (now > b->last_ns) {
		add = (now - b->last_ns) * cfg->rate / NSEC;
		if (add) {
			b->tokens += add;
			if (b->tokens > cfg->burst)
				b->tokens = cfg->burst;
			b->last_ns = now;
		}
	}
	if (b->tokens < cost)
		return 0;
	b->tokens -= cost;
	return 1;
}

SEC("xdp")
int ddos_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct src_key src = {};
	void *l4;
	__u16 proto;
	__u8 l4proto;
	__u64 cost = 1, *amp;
	__u64 len = data_end - data;
	void *cur;

	if ((void *)(eth + 1) > data_end)
		return verdict(R_TRUNC);
	proto = eth->h_proto;
	cur = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q_) || proto == bpf_htons(ETH_P_8021AD_)) {
		__u16 *vlan = cur;

		if ((void *)(vlan + 2) > data_end)
			return verdict(R_TRUNC);
		proto = vlan[1];
		cur = vlan + 2;
	}
	if (proto == bpf_htons(ETH_P_8021Q_)) {
		__u16 *vlan = cur;

		if ((void *)(vlan + 2) > data_end)
			return verdict(R_TRUNC);
		proto = vlan[1];
		cur = vlan + 2;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = cur;

		if ((void *)(ip + 1) > data_end)
			return verdict(R_TRUNC);
		if (ip->ihl < 5)
			return verdict(R_TRUNC);
		src.family = 4;
		src.addr[0] = ip->saddr;
		if (bpf_map_lookup_elem(&deny4, &src.addr[0]))
			return drop_src(&src, len, R_DENY);
		if (ip->frag_off & bpf_htons(0x1fff))
			return drop_src(&src, len, R_FRAG);
		l4proto = ip->protocol;
		l4 = (void *)ip + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = cur;

		if ((void *)(ip6 + 1) > data_end)
			return verdict(R_TRUNC);
		src.family = 6;
		__builtin_memcpy(src.addr, &ip6->saddr, sizeof(src.addr));
		if (bpf_map_lookup_elem(&deny6, &ip6->saddr))
			return drop_src(&src, len, R_DENY);
		l4proto = ip6->nexthdr;
		l4 = ip6 + 1;
	} else {
		return verdict(R_NOT_IP);
	}

	if (l4proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > data_end)
			return verdict(R_TRUNC);
		if ((tcp->syn && tcp->fin) ||
		    !(tcp->syn || tcp->ack || tcp->rst || tcp->fin))
			return drop_src(&src, len, R_BAD_TCP);
		if (tcp->syn && !tcp->ack)
			cost = 2; // a new connection costs more
	} else if (l4proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;
		__u16 port;

		if ((void *)(udp + 1) > data_end)
			return verdict(R_TRUNC);
		port = bpf_ntohs(udp->source);
		amp = bpf_map_lookup_elem(&amp_ports, &port);
		if (amp) {
			__u32 zero = 0;
			struct config *cfg = bpf_map_lookup_elem(&config, &zero);

			if (cfg && cfg->amp_cost > 1 && cfg->amp_cost < 1000)
				cost = cfg->amp_cost;
		}
	} else if (l4proto == IPPROTO_ICMP || l4proto == IPPROTO_ICMPV6) {
		struct icmp_head *icmp = l4;

		if ((void *)(icmp + 1) > data_end)
			return verdict(R_TRUNC);
		if (icmp->type == 8 || icmp->type == 128) // echo requests
			cost = 4;
	}

	if (!take(&src, cost))
		return drop_src(&src, len, R_RATE);
	return verdict(R_PASS);
}

char _license[] SEC("license") = "GPL";
