//go:build ignore

// syncookie.c exercises the TCP syncookie helpers on a packet of the test
// run: an Ethernet header, an IPv4 or IPv6 header and a TCP header (with
// options), padded so that 64 bytes follow each header.
//
// cookie reads a request from req[0] (the operation, the header sizes
// to pass, the listener to use, what to add to the ACK's ack_seq) and
// stores the helpers' results in out[0]:
//   op 0: bpf_tcp_gen_syncookie, 1: bpf_tcp_check_syncookie (with the
//   listener bpf_sk_lookup_tcp finds for the packet's destination);
//   op 2: bpf_tcp_raw_gen_syncookie_ipv4/6, 3: bpf_tcp_raw_check_syncookie_ipv4/6;
//   op 4 and 5: the gen of op 0 or 2 on the SYN, then the check of op 1
//   or 3 on the ACK that answers it (seq + 1, ack_seq cookie + 1 + delta).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

struct req {
	__u32 op, iph_len, th_len, delta;
};

struct res {
	__s64 gen, check;
	__u32 found, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct req);
} req SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct res);
} out SEC(".maps");

#define ROOM 64

SEC("tc")
int cookie(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u32 zero = 0, iph_len, th_len, ipsz;
	struct req *q = bpf_map_lookup_elem(&req, &zero);
	struct res *o = bpf_map_lookup_elem(&out, &zero);
	struct bpf_sock_tuple tuple = {};
	struct bpf_sock *sk = 0;
	struct tcphdr ack;
	struct tcphdr *th;
	void *ip;
	int v6;
	__s64 gen = 0;

	if (!q || !o || (void *)(eth + 1) > end)
		return TC_ACT_SHOT;
	v6 = eth->h_proto == bpf_htons(ETH_P_IPV6);
	ipsz = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	ip = eth + 1;
	if (ip + ROOM > end)
		return TC_ACT_SHOT;
	th = ip + ipsz;
	if ((void *)th + ROOM > end)
		return TC_ACT_SHOT;
	/* 1 to ROOM, as the tests give them. */
	iph_len = ((q->iph_len - 1) & (ROOM - 1)) + 1;
	th_len = ((q->th_len - 1) & (ROOM - 1)) + 1;
	o->gen = o->check = 0;
	o->found = 0;

	if (q->op != 2 && q->op != 3 && q->op != 5) {
		if (v6) {
			struct ipv6hdr *h = ip;
			__builtin_memcpy(tuple.ipv6.saddr, &h->saddr, 16);
			__builtin_memcpy(tuple.ipv6.daddr, &h->daddr, 16);
			tuple.ipv6.sport = th->source;
			tuple.ipv6.dport = th->dest;
			sk = bpf_sk_lookup_tcp(skb, &tuple, sizeof(tuple.ipv6), BPF_F_CURRENT_NETNS, 0);
		} else {
			struct iphdr *h = ip;
			tuple.ipv4.saddr = h->saddr;
			tuple.ipv4.daddr = h->daddr;
			tuple.ipv4.sport = th->source;
			tuple.ipv4.dport = th->dest;
			sk = bpf_sk_lookup_tcp(skb, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
		}
		if (!sk)
			return TC_ACT_OK;
		o->found = 1;
	}

	switch (q->op) {
	case 0:
	case 4:
		if (sk)
			gen = bpf_tcp_gen_syncookie(sk, ip, iph_len, th, th_len);
		break;
	case 1:
		if (sk)
			o->check = bpf_tcp_check_syncookie(sk, ip, iph_len, th, th_len);
		break;
	case 2:
	case 5:
		gen = v6 ? bpf_tcp_raw_gen_syncookie_ipv6(ip, th, th_len) : bpf_tcp_raw_gen_syncookie_ipv4(ip, th, th_len);
		break;
	case 3:
		o->check = v6 ? bpf_tcp_raw_check_syncookie_ipv6(ip, th) : bpf_tcp_raw_check_syncookie_ipv4(ip, th);
		break;
	}
	o->gen = gen;
	if ((q->op == 4 || q->op == 5) && gen >= 0) {
		__builtin_memcpy(&ack, th, sizeof(ack));
		ack.seq = bpf_htonl(bpf_ntohl(th->seq) + 1);
		ack.ack_seq = bpf_htonl((__u32)gen + 1 + q->delta);
		ack.doff = 5;
		ack.syn = 0;
		ack.ack = 1;
		if (q->op == 4) {
			if (sk)
				o->check = bpf_tcp_check_syncookie(sk, ip, iph_len, &ack, sizeof(ack));
		} else {
			o->check = v6 ? bpf_tcp_raw_check_syncookie_ipv6(ip, &ack) : bpf_tcp_raw_check_syncookie_ipv4(ip, &ack);
		}
	}
	if (sk)
		bpf_sk_release(sk);
	return TC_ACT_OK;
}
