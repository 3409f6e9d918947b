//go:build ignore

// jhash.c is a CPU-heavy benchmark: a Jenkins lookup3-style hash (written for
// this corpus from the published algorithm) over the first 1 KiB of the
// packet, using bounded loops over 12-byte blocks.
//
// Words are assembled from bytes in little-endian order, so the result does
// not depend on the host's byte order. The initial value of a, b and c is
// JHASH_SEED + length, where length is min(packet length, 1024).
// The program returns the 32-bit hash as its (unsigned) return value.
//
// Expected (byte i of the packet is i & 0xff; checked against the kernel
// with BPF_PROG_TEST_RUN):
//   - empty packet:        0xdeadbeef (no mixing happens)
//   - 14 bytes:            0x9609e9d3
//   - 64 bytes:            0x9ff036cc
//   - 1024 or 1500 bytes:  0x2a05ad7f (only the first 1 KiB is hashed)
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define JHASH_SEED 0xdeadbeef
#define MAX_BYTES 1024
#define BLOCK 12
#define MAX_BLOCKS (MAX_BYTES / BLOCK + 1)

static __always_inline __u32 rol32(__u32 x, int k)
{
	return (x << k) | (x >> (32 - k));
}

static __always_inline __u32 le32(const __u8 *p)
{
	return (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 |
	       (__u32)p[3] << 24;
}

// Mix three words reversibly; shift amounts from lookup3's mix().
#define JMIX(a, b, c)                          \
	do {                                   \
		a -= c; a ^= rol32(c, 4);  c += b; \
		b -= a; b ^= rol32(a, 6);  a += c; \
		c -= b; c ^= rol32(b, 8);  b += a; \
		a -= c; a ^= rol32(c, 16); c += b; \
		b -= a; b ^= rol32(a, 19); a += c; \
		c -= b; c ^= rol32(b, 4);  b += a; \
	} while (0)

// Final avalanche of the three words into c; from lookup3's final().
#define JFINAL(a, b, c)                        \
	do {                                   \
		c ^= b; c -= rol32(b, 14);     \
		a ^= c; a -= rol32(c, 11);     \
		b ^= a; b -= rol32(a, 25);     \
		c ^= b; c -= rol32(b, 16);     \
		a ^= c; a -= rol32(c, 4);      \
		b ^= a; b -= rol32(a, 14);     \
		c ^= b; c -= rol32(b, 24);     \
	} while (0)

SEC("xdp")
int jhash_entry(struct xdp_md *ctx)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	__u32 len = end - data;
	__u32 a, b, c;
	__u8 tail[BLOCK] = {};

	if (len > MAX_BYTES)
		len = MAX_BYTES;
	a = b = c = JHASH_SEED + len;
	if (len == 0)
		return c;

	// Whole blocks, keeping the last 1..12 bytes for the tail as lookup3
	// does so that they go through the final mix. The packet pointer is
	// re-derived from a bounded offset each round; the empty asm stops
	// clang from folding the loop into arithmetic on data_end, which the
	// verifier rejects.
	__u32 off = 0;

	for (int i = 0; i < MAX_BLOCKS; i++) {
		const __u8 *p;

		if (len - off <= BLOCK)
			break;
		asm volatile("" : "+r"(off));
		if (off > MAX_BYTES)
			return 0;
		p = data + off;
		if (p + BLOCK > end)
			return 0;
		a += le32(p);
		b += le32(p + 4);
		c += le32(p + 8);
		JMIX(a, b, c);
		off += BLOCK;
	}

	// Tail: copy the remaining 1..12 bytes into a zeroed block.
	for (int i = 0; i < BLOCK; i++) {
		const __u8 *p;

		if (off + i >= len)
			break;
		asm volatile("" : "+r"(off));
		if (off > MAX_BYTES)
			return 0;
		p = data + off + i;
		if (p + 1 > end)
			return 0;
		tail[i] = *p;
	}
	a += le32(tail);
	b += le32(tail + 4);
	c += le32(tail + 8);
	JFINAL(a, b, c);
	return c;
}

char _license[] SEC("license") = "GPL";
