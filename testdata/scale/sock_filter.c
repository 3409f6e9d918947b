//go:build ignore

// sock_filter.c: a loop-free socket filter in the classic style: headers are
// read with the legacy packet loads (LD_ABS for fixed offsets, LD_IND for
// offsets behind the variable-length IPv4 header, via clang's
// llvm.bpf.load.* intrinsics) and the payload with bpf_skb_load_bytes into
// a stack buffer.
//
// It keeps (returns the full length) IPv4 or IPv6 packets that are
//   - DNS queries or responses over UDP port 53 with a sane header (opcode
//     QUERY, at most 16 questions), or
//   - TCP segments to or from port 80/443/8080 whose payload, if any, does
//     not start with "CONNECT ",
// truncates other UDP packets to their first 128 bytes and drops the rest.
//
// For the verifier: LD_ABS/LD_IND with the implicit R6 context and
// clobbered R1-R5, a stack buffer filled by a helper and read back, and
// branches on bytes the helper wrote.
//
// Expected verdict: ACCEPTED.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

unsigned long long ld_byte(void *skb, unsigned long long off) asm("llvm.bpf.load.byte");
unsigned long long ld_half(void *skb, unsigned long long off) asm("llvm.bpf.load.half");
unsigned long long ld_word(void *skb, unsigned long long off) asm("llvm.bpf.load.word");

#define KEEP 0xffff
#define SNAP 128

static __always_inline int web_port(__u32 p)
{
	return p == 80 || p == 443 || p == 8080;
}

SEC("socket")
int sock_filter(struct __sk_buff *skb)
{
	__u32 l3 = ETH_HLEN, l4, proto, sport, dport, plen;
	__u8 payload[12];

	switch (ld_half(skb, 12)) {
	case ETH_P_IP:
		if ((ld_byte(skb, l3) >> 4) != 4)
			return 0;
		if (ld_half(skb, l3 + 6) & 0x3fff) // fragment
			return 0;
		proto = ld_byte(skb, l3 + 9);
		l4 = l3 + (ld_byte(skb, l3) & 0xf) * 4;
		break;
	case ETH_P_IPV6:
		if ((ld_word(skb, l3) >> 28) != 6)
			return 0;
		proto = ld_byte(skb, l3 + 6);
		l4 = l3 + 40;
		break;
	default:
		return 0;
	}
	if (l4 > skb->len)
		return 0;

	sport = ld_half(skb, l4);
	dport = ld_half(skb, l4 + 2);
	if (proto == IPPROTO_UDP) {
		if (sport != 53 && dport != 53)
			return SNAP;
		// DNS header after the 8-byte UDP header.
		if (bpf_skb_load_bytes(skb, l4 + 8, payload, 12) < 0)
			return 0;
		if ((payload[2] >> 3) & 0xf) // opcode other than QUERY
			return 0;
		if (payload[4] != 0 || payload[5] > 16) // QDCOUNT
			return 0;
		return KEEP;
	}
	if (proto != IPPROTO_TCP)
		return 0;
	if (!web_port(sport) && !web_port(dport))
		return 0;
	plen = (ld_byte(skb, l4 + 12) >> 4) * 4; // TCP data offset
	if (plen < 20)
		return 0;
	if (bpf_skb_load_bytes(skb, l4 + plen, payload, 8) < 0)
		return KEEP; // no payload
	if (payload[0] == 'C' && payload[1] == 'O' && payload[2] == 'N' &&
	    payload[3] == 'N' && payload[4] == 'E' && payload[5] == 'C' &&
	    payload[6] == 'T' && payload[7] == ' ')
		return 0;
	return KEEP;
}

char _license[] SEC("license") = "GPL";
