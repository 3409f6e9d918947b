//go:build ignore

// scale2.c: verifier scalability, shape of the kernel's test_verif_scale2
// (from the patch series "bpf: improve verifier scalability"). The same 90
// bounds-checked hash steps over 14-byte packet windows as scale1.c, but the
// lookup3-style hash (pkt_hash.h) is __always_inline: one huge loop-free
// function of ~14k instructions with no subprogram calls.
//
// Expected verdict: ACCEPTED, with most of a million instructions processed
// (the kernel quotes ~947k for its own version) — below the 1M complexity
// limit.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define PKT_HASH_ATTR __always_inline
#include "pkt_hash.h"
#include "scale_steps.h"

#define KEY_LEN 14

SEC("tc")
int scale2_inline14(struct __sk_buff *skb)
{
	const __u8 *data = (const __u8 *)(long)skb->data;
	const __u8 *data_end = (const __u8 *)(long)skb->data_end;
	__u32 off = 0;

	STEPS90(KEY_LEN);
	return 0;
}

char _license[] SEC("license") = "GPL";
