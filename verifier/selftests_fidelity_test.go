package verifier_test

import (
	"testing"

	"bpfvm/maps"
)

// Cases for the kernel-fidelity classes of issue #14, each compared with
// the running kernel by runCases.

// lookupArr leaves a pointer to arrayMap's element 0 (8 bytes) in r0, or
// jumps to out.
const lookupArr = "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\n"

func TestFidelityShifts(t *testing.T) {
	// Each shifts r1 by r2 and then indexes the 8-byte value with r1:
	// accepted only where the kernel knows r1 < 8.
	access := "r0 += r1\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit"
	arr := []maps.Spec{arrayMap}
	unbounded := "math between map_value pointer and register with unbounded min value is not allowed"
	cases := []vcase{
		// Constant amounts below the width are computed.
		{name: "lsh64 reg 2", asm: lookupArr + "r1 = 1\nr2 = 2\nr1 <<= r2\n" + access},
		{name: "lsh32 reg 2", asm: lookupArr + "r1 = 1\nr2 = 2\nw1 <<= w2\n" + access},
		{name: "rsh64 reg 61", asm: lookupArr + "r1 = -1\nr2 = 61\nr1 >>= r2\n" + access},
		{name: "rsh32 reg 29", asm: lookupArr + "r1 = -1\nr2 = 29\nw1 >>= w2\n" + access},
		{name: "arsh64 reg 63 of positive", asm: lookupArr + "r1 = 7\nr2 = 63\nr1 s>>= r2\n" + access},
		{name: "arsh32 reg 31 of positive", asm: lookupArr + "r1 = 7\nr2 = 31\nw1 s>>= w2\n" + access},
		{name: "lsh64 unknown dst const amount", asm: lookupArr + "r1 = *(u64 *)(r0 +0)\nr1 &= 1\nr2 = 2\nr1 <<= r2\n" + access},
		// An amount of at least the width makes the result unknown
		// although the runtime masks it (here to a shift by 0).
		{name: "lsh64 reg 64", asm: lookupArr + "r1 = 1\nr2 = 64\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh32 reg 32", asm: lookupArr + "r1 = 1\nr2 = 32\nw1 <<= w2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh64 reg 64", asm: lookupArr + "r1 = 1\nr2 = 64\nr1 >>= r2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh32 reg 32", asm: lookupArr + "r1 = 1\nr2 = 32\nw1 >>= w2\n" + access, err: unbounded, kmsg: true},
		{name: "arsh64 reg 64", asm: lookupArr + "r1 = 1\nr2 = 64\nr1 s>>= r2\n" + access, err: unbounded, kmsg: true},
		{name: "arsh32 reg 32", asm: lookupArr + "r1 = 1\nr2 = 32\nw1 s>>= w2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh64 reg 65", asm: lookupArr + "r1 = 1\nr2 = 65\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh64 reg -1", asm: lookupArr + "r1 = 0\nr2 = -1\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		// The 32-bit form checks the 64-bit value of the amount: the
		// low half 1 is not enough.
		{name: "lsh32 amount with high bits", asm: lookupArr + "r1 = 1\nr2 = 1\nr3 = 1\nr3 <<= 32\nr2 |= r3\nw1 <<= w2\n" + access, err: unbounded, kmsg: true},
		// ... and an unknown 32-bit result is not zero-extended.
		{name: "lsh32 reg 32 high half unknown", asm: lookupArr + "r1 = 0\nr2 = 32\nw1 <<= w2\nr1 >>= 32\n" + access, err: "R0 unbounded memory access"},
		// Amounts that are not constant make the result unknown, even
		// when every value is below the width.
		{name: "lsh64 amount 0 or 1", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 1\nr1 = 1\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh64 amount 0 or 1", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 1\nr1 = 1\nr1 >>= r2\n" + access, err: unbounded, kmsg: true},
		{name: "arsh32 amount 0 or 1", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 1\nr1 = 1\nw1 s>>= w2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh64 amount across width", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 64\nr1 = 1\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh32 amount across width", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 32\nr1 = 1\nw1 >>= w2\n" + access, err: unbounded, kmsg: true},
		// A known amount bounded by a branch is a constant.
		{name: "lsh64 amount fixed by branch", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nif r2 != 2 goto out\nr1 = 1\nr1 <<= r2\n" + access},
	}
	for i := range cases {
		cases[i].maps = arr
	}
	runCases(t, cases)
}
