package verifier_test

import (
	"testing"

	"bpfvm/maps"
)

// Precision across loop back-edges: a value the loop copies into the one
// used after it must be precise at the loop head, though the path going
// round the loop ends (covered by the head) before the exit path, explored
// later, makes the used value precise. A second path then reaches the loop
// head with another value, which must not be pruned there.
func TestSelftestBackedge(t *testing.T) {
	m := []maps.Spec{val48}
	// Two paths reach the head: r8 = 0 first, then r8 = 100.
	pre := lookup4 + "if r0 == 0 goto out\nr7 = r0\nr1 = *(u64 *)(r0 +8)\nr8 = 0\nr9 = 0\nr6 = 0\nif r1 > 5 goto second\ngoto head\nsecond: r8 = 100\n"
	use := "r2 = r7\nr2 += r9\nr0 = *(u8 *)(r2 +0)\nout: r0 = 0\nexit"
	cb := func(body string) string {
		// The callback copies ctx[1] into ctx[0]; ctx[0] is used after.
		return lookup4 + "if r0 == 0 goto out\nr7 = r0\nr1 = *(u64 *)(r0 +8)\nr8 = 0\n*(u64 *)(r10 -16) = r8\nif r1 > 5 goto second\ngoto head\nsecond: r8 = 100\n" +
			"head: *(u64 *)(r10 -24) = r8\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_loop#181\nr9 = *(u64 *)(r10 -16)\n" + use + "\ncb: " + body
	}
	// The callback reads its context: fp-24 holds r8, fp-32 the map value.
	cbUse := lookup4 + "if r0 == 0 goto out\nr7 = r0\nr1 = *(u64 *)(r0 +8)\nr8 = 0\nif r1 > 5 goto second\ngoto head\nsecond: r8 = 100\n" +
		"head: *(u64 *)(r10 -24) = r8\n*(u64 *)(r10 -16) = r7\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_loop#181\nout: r0 = 0\nexit\ncb: "
	runCases(t, []vcase{
		{name: "callback uses the caller's value as an offset", noKernel: true, maps: m, asm: cbUse + "r3 = *(u64 *)(r2 +0)\nr4 = *(u64 *)(r2 +8)\nr4 += r3\nr0 = *(u8 *)(r4 +0)\nr0 = 0\nexit", err: "invalid access to map value"},
		{name: "callback uses the caller's value in a branch", noKernel: true, maps: m, asm: cbUse + "r3 = *(u64 *)(r2 +0)\nr4 = *(u64 *)(r2 +8)\nif r3 == 0 goto z\nr0 = *(u8 *)(r4 +48)\nz: r0 = 0\nexit", err: "invalid access to map value"},
		{name: "callback context is the caller's scalar", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +8)\nr8 = 0\nif r1 > 5 goto second\ngoto head\nsecond: r8 = 100\n" +
			"head: *(u64 *)(r10 -24) = r8\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_loop#181\nout: r0 = 0\nexit\ncb: r3 = *(u64 *)(r2 +0)\nif r3 != 100 goto z\nr0 = *(u64 *)(r10 +8)\nz: r0 = 0\nexit", err: "invalid read from stack"},
		{name: "value kept across the callback loop", noKernel: true, maps: m, asm: lookup4 + "if r0 == 0 goto out\nr7 = r0\nr1 = *(u64 *)(r0 +8)\nr8 = 0\nif r1 > 5 goto second\ngoto head\nsecond: r8 = 100\n" +
			"head: *(u64 *)(r10 -16) = r8\nr1 = 4\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr9 = *(u64 *)(r10 -16)\n" + use + "\ncb: r0 = 0\nexit", err: "invalid access to map value"},
		{name: "may_goto copies the value used after the loop", maps: m, asm: pre + "head: may_goto done\nr9 = r8\ngoto head\ndone: " + use, err: "invalid access to map value"},
		{name: "may_goto copies through a spill", maps: m, asm: pre + "head: may_goto done\n*(u64 *)(r10 -16) = r8\nr9 = *(u64 *)(r10 -16)\ngoto head\ndone: " + use, err: "invalid access to map value"},
		{name: "may_goto adds the value", maps: m, asm: pre + "head: may_goto done\nr9 = 1\nr9 += r8\ngoto head\ndone: " + use, err: "invalid access to map value"},
		{name: "nested may_goto loops copy the value", maps: m, asm: pre + "head: may_goto done\nr6 = 0\ninner: may_goto next\nr9 = r8\ngoto inner\nnext: goto head\ndone: " + use, err: "unbounded min value"},
		{name: "may_goto copies the value one round late", maps: m, asm: pre + "head: may_goto done\nr9 = r6\nr6 = r8\ngoto head\ndone: " + use, err: "unbounded min value"},
		{name: "may_goto loop with a safe value", maps: m, asm: pre + "head: may_goto done\nr9 = r8\nr9 &= 7\ngoto head\ndone: " + use},
		{name: "callback copies the value used after the loop", noKernel: true, maps: m, asm: cb("r3 = *(u64 *)(r2 +0)\n*(u64 *)(r2 +8) = r3\nr0 = 0\nexit"), err: "map_value pointer"},
	})
}
