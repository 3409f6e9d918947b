//go:build ignore

// pkt_hash.h: a Jenkins lookup3-style hash of a byte string, written for this
// corpus from the published (public domain) algorithm. It is the shape of the
// hash that the kernel's verifier scale tests run on packet bytes: 12-byte
// blocks loaded as three 32-bit words and mixed, then a tail of up to 12
// bytes added byte by byte before the final avalanche.
//
// Before including it, define PKT_HASH_ATTR as __noinline (one subprogram the
// verifier walks once per call site) or __always_inline (a copy per call
// site).
#ifndef PKT_HASH_H
#define PKT_HASH_H

#include <linux/types.h>

#define PKT_HASH_SEED 0x9e3779b9u

struct hash_words {
	__u32 a, b, c;
};

static __always_inline __u32 rotl32(__u32 v, unsigned int n)
{
	return (v << n) | (v >> (32 - n));
}

// Reversible mixing of the three words (lookup3's mix()).
static __always_inline void hw_mix(struct hash_words *w)
{
	w->a -= w->c; w->a ^= rotl32(w->c, 4);  w->c += w->b;
	w->b -= w->a; w->b ^= rotl32(w->a, 6);  w->a += w->c;
	w->c -= w->b; w->c ^= rotl32(w->b, 8);  w->b += w->a;
	w->a -= w->c; w->a ^= rotl32(w->c, 16); w->c += w->b;
	w->b -= w->a; w->b ^= rotl32(w->a, 19); w->a += w->c;
	w->c -= w->b; w->c ^= rotl32(w->b, 4);  w->b += w->a;
}

// Final avalanche into c (lookup3's final()).
static __always_inline void hw_final(struct hash_words *w)
{
	w->c ^= w->b; w->c -= rotl32(w->b, 14);
	w->a ^= w->c; w->a -= rotl32(w->c, 11);
	w->b ^= w->a; w->b -= rotl32(w->a, 25);
	w->c ^= w->b; w->c -= rotl32(w->b, 16);
	w->a ^= w->c; w->a -= rotl32(w->c, 4);
	w->b ^= w->a; w->b -= rotl32(w->a, 14);
	w->c ^= w->b; w->c -= rotl32(w->b, 24);
}

// A 32-bit word of the key. The volatile load keeps clang from merging or
// splitting the accesses, so the verifier sees one 4-byte packet load each.
static __always_inline __u32 key_word(const __u8 *p)
{
	return *(volatile const __u32 *)p;
}

// pkt_hash hashes len bytes at key. Callers pass a constant len, which clang
// propagates into the function, so the block loop and the tail are fully
// unrolled and the body is loop-free.
static PKT_HASH_ATTR __u32 pkt_hash(const __u8 *key, __u32 len, __u32 seed)
{
	struct hash_words w;
	__u32 tail[3] = {0, 0, 0};

	w.a = w.b = w.c = PKT_HASH_SEED + len + seed;
	while (len > 12) {
		w.a += key_word(key);
		w.b += key_word(key + 4);
		w.c += key_word(key + 8);
		hw_mix(&w);
		key += 12;
		len -= 12;
	}
	if (len == 0)
		return w.c;
	// The last 1..12 bytes, little-endian into up to three words.
#pragma unroll
	for (int i = 0; i < 12; i++)
		if (i < len)
			tail[i / 4] += (__u32)key[i] << (8 * (i % 4));
	w.a += tail[0];
	w.b += tail[1];
	w.c += tail[2];
	hw_final(&w);
	return w.c;
}

#endif
