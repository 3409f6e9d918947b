//go:build ignore

// subprog.c tests BPF-to-BPF calls: an XDP program that calls static and
// global __noinline subprograms, with a nested call chain and a stack buffer
// handed to a callee by pointer.
//
// Behaviour: the program copies the first 8 packet bytes into a stack buffer
// (fill_buf), sums them (sum_bytes), and returns
// mix(buf, sum, 8) = sum * 3 + (sum_bytes(buf) ^ 0x5a) + scale(8), where
// scale(n) = n * 2. Bytes after the eighth are ignored; packets shorter than
// 8 bytes return 0.
//
// Expected:
//   - packet starting 01 02 03 04 05 06 07 08: sum 36,
//     36*3 + (36^0x5a) + 16 = 108 + 126 + 16 = 250;
//   - packet starting with eight 0xff bytes: sum 2040,
//     6120 + 1954 + 16 = 8090.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define BUF_LEN 8

// scale is a global subprogram: the verifier checks it independently of its
// callers, so it only takes scalars.
__noinline int scale(int len)
{
	return len * 2;
}

// sum_bytes reads a caller's stack buffer through a pointer.
static __noinline int sum_bytes(const unsigned char *buf)
{
	int sum = 0;

	for (int i = 0; i < BUF_LEN; i++)
		sum += buf[i];
	return sum;
}

// mix is a nested call: entry -> mix -> sum_bytes and entry -> mix -> scale.
static __noinline int mix(const unsigned char *buf, int sum, int len)
{
	return sum * 3 + (sum_bytes(buf) ^ 0x5a) + scale(len);
}

// fill_buf writes into the caller's stack buffer.
static __noinline int fill_buf(struct xdp_md *ctx, unsigned char *buf)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + BUF_LEN > data_end)
		return -1;
	__builtin_memcpy(buf, data, BUF_LEN);
	return 0;
}

SEC("xdp")
int subprog_entry(struct xdp_md *ctx)
{
	unsigned char buf[BUF_LEN] = {};

	if (fill_buf(ctx, buf) < 0)
		return 0;
	return mix(buf, sum_bytes(buf), BUF_LEN);
}

char _license[] SEC("license") = "GPL";
