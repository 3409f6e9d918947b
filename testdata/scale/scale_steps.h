//go:build ignore

// scale_steps.h: the 90 hash call sites shared by scale1/2/3. One step
// hashes the window of n bytes at data + off when it lies inside the packet,
// stores the hash in skb->tc_index and moves to the next offset; a window
// past data_end leaves the offset as it is. Uses data, data_end, off and skb
// from the caller.
#ifndef SCALE_STEPS_H
#define SCALE_STEPS_H

#define STEP(n)                                                         \
	if (data + off + (n) <= data_end) {                             \
		skb->tc_index = pkt_hash(data + off, (n), skb->cb[0] + off); \
		off++;                                                  \
	}

#define STEPS10(n) STEP(n) STEP(n) STEP(n) STEP(n) STEP(n) \
		   STEP(n) STEP(n) STEP(n) STEP(n) STEP(n)
#define STEPS90(n) STEPS10(n) STEPS10(n) STEPS10(n) STEPS10(n) STEPS10(n) \
		   STEPS10(n) STEPS10(n) STEPS10(n) STEPS10(n)

#endif
