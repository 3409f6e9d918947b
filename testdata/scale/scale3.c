//go:build ignore

// scale3.c: verifier scalability, shape of the kernel's test_verif_scale3
// (from the patch series "bpf: improve verifier scalability"). Like
// scale1.c — 90 bounds-checked call sites of a __noinline lookup3-style hash
// (pkt_hash.h) in a tc program — but each call hashes a 32-byte packet
// window: two full 12-byte blocks and an 8-byte tail, so the hash
// subprogram is about twice as long.
//
// Expected verdict: ACCEPTED, close to the 1M complexity limit (the kernel
// quotes ~991k processed instructions for its own version).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define PKT_HASH_ATTR __noinline
#include "pkt_hash.h"
#include "scale_steps.h"

#define KEY_LEN 32

SEC("tc")
int scale3_noinline32(struct __sk_buff *skb)
{
	const __u8 *data = (const __u8 *)(long)skb->data;
	const __u8 *data_end = (const __u8 *)(long)skb->data_end;
	__u32 off = 0;

	STEPS90(KEY_LEN);
	return 0;
}

char _license[] SEC("license") = "GPL";
