//go:build ignore

// straight_line.c: a program with no branches at all, exactly at the
// kernel's limits: 1,000,000 instructions, each processed once, so the
// verifier's count is the program length and hits BPF_COMPLEXITY_LIMIT_INSNS
// (1,000,000 processed instructions, which is also the largest program a
// privileged load may have) exactly without going over it.
//
// The body is one inline-assembly block repeated with .rept: ten
// instructions of 64- and 32-bit ALU operations on a scalar derived from
// skb->len, one stack store and one stack load. Assembly keeps clang from
// folding the sequence and keeps the source and the compile small.
//
// Why only two stack accesses in ten: Linux 6.18 records every stack access
// in the verifier's instruction history (for precision backtracking), and
// that history is only trimmed at a new checkpoint, which straight-line code
// never creates. The history is one kmalloc'ed array of 16-byte entries, so
// more than 262,144 stack accesses in one branch-free stretch need more than
// 4 MB and the load fails with ENOMEM (and a kmalloc warning in dmesg): a
// version with four stack accesses per ten instructions failed at 655,360
// processed instructions. This one makes 200,002.
//
// Expected verdict: ACCEPTED, processed = 1,000,000 instructions, no states.
// The object's .text is 8 MB (it compresses to almost nothing in git).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// Ten instructions a repetition; the ten outside it (the load of skb->len,
// moves, four initial stores, the result mask and exit) make 1,000,000.
#define REPS 99999
#define STR_(x) #x
#define STR(x) STR_(x)

SEC("tc")
int straight_line(struct __sk_buff *skb)
{
	__u64 x = skb->len;

	asm volatile(
		"r1 = %[x]\n"
		"r2 = 7\n"
		"*(u64 *)(r10 - 8) = r1\n"
		"*(u64 *)(r10 - 16) = r2\n"
		"*(u64 *)(r10 - 24) = r2\n"
		"*(u64 *)(r10 - 32) = r2\n"
		".rept " STR(REPS) "\n"
		"r1 += 3\n"
		"r2 ^= r1\n"
		"w3 = w1\n"
		"w3 *= 5\n"
		"r4 = r3\n"
		"r4 |= 1\n"
		"*(u64 *)(r10 - 16) = r2\n"
		"r5 = *(u64 *)(r10 - 8)\n"
		"r2 += r5\n"
		"r1 &= 0xffff\n"
		".endr\n"
		"%[x] = r1\n"
		: [x] "+r"(x)
		:
		: "r1", "r2", "r3", "r4", "r5", "memory");
	return x & 1;
}

char _license[] SEC("license") = "GPL";
