//go:build ignore

// tcprtt.c: a histogram of TCP smoothed round-trip times, in the manner of
// bcc's libbpf-tools tcprtt, written for bpfvm's example: each time a TCP
// socket receives on an established connection the program reads the
// socket's srtt_us through bpf_skc_to_tcp_sock and counts it in a log2
// slot of the histogram of its key (the remote address, or 0 for all),
// optionally filtered by remote port. Two attachments of the same logic:
// fentry on tcp_rcv_established(struct sock *sk) and tp_btf on the
// tcp_probe tracepoint (struct sock *sk, struct sk_buff *skb). The local
// kernel types are relocated with CO-RE against the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct sock_common {
	unsigned short skc_family;
	unsigned int skc_daddr;
	unsigned short skc_dport;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct tcp_sock {
	unsigned int srtt_us;
} __attribute__((preserve_access_index));

#define MAX_SLOTS 27

// hist is a histogram: counts by log2 of the RTT in microseconds, and the
// sum and number of samples for the mean.
struct hist {
	__u64 slots[MAX_SLOTS];
	__u64 latency;
	__u64 cnt;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct hist);
} hists SEC(".maps");

// Filters and options, set before loading (0: off).
const volatile __u16 targ_dport = 0;   // remote port, network order
const volatile __u8 targ_raddr_hist = 0; // one histogram per remote address
const volatile __u8 targ_ms = 0;       // milliseconds rather than microseconds

static const struct hist zero;

static __always_inline __u64 log2_u32(__u32 v)
{
	__u64 r = 0;

	for (int i = 16; i > 0; i >>= 1) {
		if (v >= (1u << i)) {
			v >>= i;
			r += i;
		}
	}
	return r;
}

static __always_inline int record(struct sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	struct hist *h;
	__u64 key = 0, slot;
	__u32 srtt;

	if (!tp)
		return 0;
	if (targ_dport && sk->__sk_common.skc_dport != targ_dport)
		return 0;
	if (targ_raddr_hist)
		key = sk->__sk_common.skc_daddr;
	h = bpf_map_lookup_elem(&hists, &key);
	if (!h) {
		bpf_map_update_elem(&hists, &key, &zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h)
			return 0;
	}
	// srtt_us holds the smoothed RTT << 3.
	srtt = tp->srtt_us >> 3;
	if (targ_ms)
		srtt /= 1000;
	slot = log2_u32(srtt);
	if (slot >= MAX_SLOTS)
		slot = MAX_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->latency, srtt);
	__sync_fetch_and_add(&h->cnt, 1);
	return 0;
}

SEC("fentry/tcp_rcv_established")
int tcp_rcv(unsigned long long *ctx)
{
	return record((struct sock *)ctx[0]);
}

SEC("tp_btf/tcp_probe")
int tcp_probe(unsigned long long *ctx)
{
	return record((struct sock *)ctx[0]);
}

char _license[] SEC("license") = "GPL";
