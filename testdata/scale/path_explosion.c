//go:build ignore

// path_explosion.c: a loop-free XDP program that no verifier walking paths
// one by one can finish. It reads 32 bits from the packet and then takes 24
// independent data-dependent branches; branch i adds 1 << i to an
// accumulator, so after k branches the 2^k paths hold 2^k different
// constants. At the end the accumulator is compared with a constant: the
// kernel's verifier knows the outcome on each path, marks the accumulator
// precise and back-propagates that mark to every remembered state, so no
// two states at a branch point ever match and nothing is pruned. 2^24 paths
// of ~4 instructions each are far beyond the limit.
//
// The empty asm statement in each branch keeps clang from turning the
// branches into branch-free arithmetic.
//
// Expected verdict: REJECTED by the complexity limit, with
// "BPF program is too large. Processed 1000001 insn".
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define BIT(i)                                          \
	if (bits & (1u << (i))) {                       \
		acc += 1u << (i);                       \
		asm volatile("" : "+r"(acc));           \
	}
#define BITS4(i) BIT(i) BIT(i + 1) BIT(i + 2) BIT(i + 3)

SEC("xdp")
int path_explosion(struct xdp_md *ctx)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *data_end = (const __u8 *)(long)ctx->data_end;
	__u32 bits, acc = 0;

	if (data + 4 > data_end)
		return XDP_PASS;
	bits = *(const __u32 *)data;

	BITS4(0) BITS4(4) BITS4(8) BITS4(12) BITS4(16) BITS4(20)

	// 0x5a5a5a is one of the 2^24 sums: drop exactly that packet.
	if (acc == 0x5a5a5a)
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
