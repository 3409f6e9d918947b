package verifier_test

import "testing"

// A privileged store at the start of a slot is a spill, of zero too (the
// kernel's check_stack_write_fixed_off): a later write to the rest of the
// slot scrubs it to unknown bytes, so the zero is lost. Only unaligned
// zero stores stay zero bytes, which such writes leave alone. Each case
// writes r0 (unknown) next to a zero and reads the zero back: bad, an
// invalid access, is reached only when the zero is lost.
func TestStackZeroStores(t *testing.T) {
	const bad = "\nif r2 != 0 goto bad\nr0 = 0\nexit\nbad: r0 = *(u64 *)(r10 -100)\nr0 = 0\nexit"
	const lost = "misaligned stack access off 0+0+-100 size 8"
	upper := "call bpf_get_prandom_u32\n*(u32 *)(r10 -4) = r0\nr2 = *(u32 *)(r10 -8)" + bad
	lower := "call bpf_get_prandom_u32\n*(u32 *)(r10 -8) = r0\nr2 = *(u32 *)(r10 -4)" + bad
	runCases(t, []vcase{
		{name: "st 64 zero", asm: "*(u64 *)(r10 -8) = 0\n" + lower, err: lost, kmsg: true},
		{name: "stx 64 zero", asm: "r1 = 0\n*(u64 *)(r10 -8) = r1\n" + lower, err: lost, kmsg: true},
		{name: "st 32 zero aligned", asm: "*(u32 *)(r10 -8) = 0\n" + upper, err: lost, kmsg: true},
		{name: "st 16 zero aligned", asm: "*(u16 *)(r10 -8) = 0\ncall bpf_get_prandom_u32\n*(u32 *)(r10 -4) = r0\nr2 = *(u16 *)(r10 -8)" + bad, err: lost, kmsg: true},
		{name: "stx 32 zero aligned", asm: "r1 = 0\n*(u32 *)(r10 -8) = r1\n" + upper, err: lost, kmsg: true},
		{name: "st 32 nonzero aligned", asm: "*(u32 *)(r10 -8) = 5\n" + upper, err: lost, kmsg: true},
		{name: "st 32 zero unaligned", asm: "*(u32 *)(r10 -4) = 0\n" + lower},
		{name: "stx 32 zero unaligned", asm: "r1 = 0\n*(u32 *)(r10 -4) = r1\n" + lower},
		{name: "st 32 zero twice", asm: "*(u32 *)(r10 -8) = 0\n*(u32 *)(r10 -4) = 0\n" + lower},
		// Zero bytes written next to a narrow zero spill scrub it too.
		{name: "st 32 zero spill then zero bytes", asm: "*(u32 *)(r10 -8) = 0\n*(u32 *)(r10 -4) = 0\nr2 = *(u64 *)(r10 -8)" + bad, err: lost, kmsg: true},
		// Zero bytes and a narrow zero spill, read whole, are unknown:
		// the kernel takes zero only from all zero bytes or all of a
		// spilled zero.
		{name: "st 32 zero bytes then zero spill", asm: "*(u32 *)(r10 -4) = 0\n*(u32 *)(r10 -8) = 0\nr2 = *(u64 *)(r10 -8)" + bad, err: lost, kmsg: true},
		{name: "st 32 zero bytes twice read whole", asm: "*(u32 *)(r10 -4) = 0\n*(u32 *)(r10 -12) = 0\nr2 = *(u32 *)(r10 -4)\nr3 = *(u32 *)(r10 -12)\nr2 |= r3" + bad},
	})
}
