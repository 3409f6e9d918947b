//go:build ignore

// scale1.c: verifier scalability, shape of the kernel's test_verif_scale1
// (from the patch series "bpf: improve verifier scalability"). A tc program
// hashes 14-byte windows of the packet at offsets 0, 1, 2, ... with a
// __noinline lookup3-style hash (pkt_hash.h), 90 call sites in straight-line
// code. Each window is bounds-checked against data_end first; on a short
// packet the window is skipped and the offset does not advance, so every
// call site is reached along paths with different offsets and packet ranges,
// and the verifier walks the hash subprogram again for each call.
//
// Expected verdict: ACCEPTED, with several hundred thousand instructions
// processed (the kernel quotes ~651k for its own version) — below the 1M
// complexity limit.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define PKT_HASH_ATTR __noinline
#include "pkt_hash.h"
#include "scale_steps.h"

#define KEY_LEN 14

SEC("tc")
int scale1_noinline14(struct __sk_buff *skb)
{
	const __u8 *data = (const __u8 *)(long)skb->data;
	const __u8 *data_end = (const __u8 *)(long)skb->data_end;
	__u32 off = 0;

	STEPS90(KEY_LEN);
	return 0;
}

char _license[] SEC("license") = "GPL";
