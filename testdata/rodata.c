//go:build ignore

// rodata.c tests that frozen .rodata is constant to the verifier, as in the
// kernel: loaders freeze .rodata before loading programs, so the
// verifier reads `const volatile` configuration from it and does not
// explore the branches it rules out (Cilium's datapath configures itself
// this way).
//
// Behaviour of rodata_branch, with the default constants: returns
// XDP_TX (3) for a packet of at least 16 bytes whose first byte is 0x42, and
// XDP_PASS (2) otherwise; `rounds` (4) bounds a loop adding 1 each round to
// the return value's upper bits (the result is 3 + (4 << 8) or 2 + (4 << 8)).
// With check_bounds set to 0 the unchecked packet read is live and the
// verifier must reject the program; with the default it is dead.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

const volatile __u32 check_bounds = 1;	// .rodata
const volatile __u8 marker = 0x42;	// .rodata
const volatile __u32 rounds = 4;	// .rodata

SEC("xdp")
int rodata_branch(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 acc = 0;

	if (!check_bounds) {
		// A packet read without a bounds check: the verifier accepts it
		// only because this branch is dead.
		return *(volatile __u8 *)(data + 1);
	}
	for (__u32 i = 0; i < rounds; i++)
		acc += 1 << 8;
	if (data + 16 > end)
		return XDP_PASS + acc;
	if (*(__u8 *)data == marker)
		return XDP_TX + acc;
	return XDP_PASS + acc;
}

char _license[] SEC("license") = "GPL";
