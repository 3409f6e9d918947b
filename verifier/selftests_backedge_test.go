package verifier_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/maps"
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
		{name: "callback uses the caller's value as an offset", maps: m, asm: cbUse + "r3 = *(u64 *)(r2 +0)\nr4 = *(u64 *)(r2 +8)\nr4 += r3\nr0 = *(u8 *)(r4 +0)\nr0 = 0\nexit", err: "invalid access to map value"},
		{name: "callback uses the caller's value in a branch", maps: m, asm: cbUse + "r3 = *(u64 *)(r2 +0)\nr4 = *(u64 *)(r2 +8)\nif r3 == 0 goto z\nr0 = *(u8 *)(r4 +48)\nz: r0 = 0\nexit", err: "invalid access to map value"},
		{name: "callback context is the caller's scalar", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +8)\nr8 = 0\nif r1 > 5 goto second\ngoto head\nsecond: r8 = 100\n" +
			"head: *(u64 *)(r10 -24) = r8\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_loop#181\nout: r0 = 0\nexit\ncb: r3 = *(u64 *)(r2 +0)\nif r3 != 100 goto z\nr0 = *(u64 *)(r10 +8)\nz: r0 = 0\nexit", err: "invalid read from stack"},
		{name: "value kept across the callback loop", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr7 = r0\nr1 = *(u64 *)(r0 +8)\nr8 = 0\nif r1 > 5 goto second\ngoto head\nsecond: r8 = 100\n" +
			"head: *(u64 *)(r10 -16) = r8\nr1 = 4\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr9 = *(u64 *)(r10 -16)\n" + use + "\ncb: r0 = 0\nexit", err: "invalid access to map value"},
		{name: "may_goto copies the value used after the loop", maps: m, asm: pre + "head: may_goto done\nr9 = r8\ngoto head\ndone: " + use, err: "invalid access to map value"},
		{name: "may_goto copies through a spill", maps: m, asm: pre + "head: may_goto done\n*(u64 *)(r10 -16) = r8\nr9 = *(u64 *)(r10 -16)\ngoto head\ndone: " + use, err: "invalid access to map value"},
		{name: "may_goto adds the value", maps: m, asm: pre + "head: may_goto done\nr9 = 1\nr9 += r8\ngoto head\ndone: " + use, err: "invalid access to map value"},
		{name: "nested may_goto loops copy the value", maps: m, asm: pre + "head: may_goto done\nr6 = 0\ninner: may_goto next\nr9 = r8\ngoto inner\nnext: goto head\ndone: " + use, err: "invalid access to map value, value_size=48 off=100 size=1", kmsg: true},
		{name: "may_goto copies the value one round late", maps: m, asm: pre + "head: may_goto done\nr9 = r6\nr6 = r8\ngoto head\ndone: " + use, err: "unbounded min value"},
		{name: "may_goto loop with a safe value", maps: m, asm: pre + "head: may_goto done\nr9 = r8\nr9 &= 7\ngoto head\ndone: " + use},
		{name: "callback copies the value used after the loop", maps: m, asm: cb("r3 = *(u64 *)(r2 +0)\n*(u64 *)(r2 +8) = r3\nr0 = 0\nexit"), err: "invalid access to map value, value_size=48 off=100 size=1", kmsg: true},
	})
}

// mayGotoChain is n may_goto loops one after the other; body is each
// loop's body, where @ names the loop's exit.
func mayGotoChain(n int, body string) string {
	var b strings.Builder
	b.WriteString("r0 = 0\nr6 = 0\n")
	for i := range n {
		fmt.Fprintf(&b, "l%d: may_goto d%d\n%sgoto l%d\nd%d: r2 = 0\n", i, i, strings.ReplaceAll(body, "@", fmt.Sprint("d", i)), i, i)
	}
	b.WriteString("r0 = 0\nexit\n")
	return b.String()
}

// TestSelftestMayGotoChains covers chains of may_goto loops. A scalar a
// loop's branch decides is precise: it is not widened, and every round is
// explored with its own value (and each exit goes on with it), so a chain
// of 200 such loops is too large, as in the kernel. Scalars that are
// imprecise are widened every round, and long chains of such loops verify.
func TestSelftestMayGotoChains(t *testing.T) {
	cases := []vcase{
		{name: "200 loops with an imprecise counter", asm: mayGotoChain(200, "r6 += 1\n")},
		{name: "200 loops with a bounded counter", asm: mayGotoChain(200, "if r6 > 9 goto @\nr6 += 1\n")},
		{name: "one loop with a precise counter", asm: mayGotoChain(1, "r0 += 1\nif r0 > 1000 goto @\n")},
	}
	if !testing.Short() {
		// Up to a million instructions here and in the kernel: seconds.
		// Counting to 100, every exit of a loop goes on into the next
		// with its own value: 3 loops fit, 4 do not, as in the kernel.
		cases = append(cases,
			vcase{name: "3 loops counting to 100", asm: mayGotoChain(3, "r0 += 1\nif r0 > 100 goto @\n")},
			vcase{name: "4 loops counting to 100", asm: mayGotoChain(4, "r0 += 1\nif r0 > 100 goto @\n"), err: "BPF program is too large. Processed 1000001 insn", kmsg: true},
			vcase{name: "200 loops with a precise counter", asm: mayGotoChain(200, "r0 += 1\nif r0 > 1000 goto @\n"), err: "BPF program is too large. Processed 1000001 insn", kmsg: true})
	}
	runCases(t, cases)
}
