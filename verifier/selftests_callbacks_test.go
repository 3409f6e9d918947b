package verifier_test

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// callbackLoops builds n bpf_loop calls of rounds rounds each, all sharing
// the context at fp-8, whose callback runs body (the context in r2) and
// returns r0.
func callbackLoops(n, rounds int, body string) string {
	var b strings.Builder
	b.WriteString("*(u64 *)(r10 -8) = 0\n")
	for range n {
		b.WriteString("r1 = " + itoa(rounds) + "\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\n")
	}
	b.WriteString("r0 = 0\nexit\ncb: " + body)
	return b.String()
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// The callback counts its context and stops once it passes 100.
const countTo100 = "r3 = *(u64 *)(r2 +0)\nr3 += 1\n*(u64 *)(r2 +0) = r3\nr0 = 0\nif r3 <= 100 goto ret\nr0 = 1\nret: exit"

// choice is a 2-byte array: an index carried through a callback loop
// that may reach 2 reads past it.
var choice = maps.Spec{Name: "choice", Type: maps.Array, KeySize: 4, ValueSize: 2, MaxEntries: 1}

// carried builds a program whose context, i at fp-16 and j at fp-8 (set
// by init), goes through a callback loop (call, with r3 the context) and
// then indexes choice: i, or j with useJ, is used after the loop; cb is
// the callback (the context in r2, or r4 for bpf_for_each_map_elem).
func carried(init, call string, useJ bool, cb string) string {
	use := "r1 = *(u64 *)(r10 -16)\n"
	if useJ {
		use = "r1 = *(u64 *)(r10 -8)\n"
	}
	return init + "r2 = subprog[cb] ll\nr3 = r10\nr3 += -16\nr4 = 0\n" + call +
		"*(u32 *)(r10 -20) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -20\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\n" +
		use + "r0 += r1\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit\ncb: " + cb
}

// oneOfThree runs 2 rounds of a callback that sets one of a, b, c (fp-24,
// fp-16, fp-8, all 7 before) to 42, at random, then divides by zero if a
// and b are 42 and c is 7: a state of one round left must not cover one of
// two (the kernel's callback_depth).
const oneOfThree = "r1 = 7\n*(u64 *)(r10 -24) = r1\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -8) = r1\n" +
	"r1 = 2\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_loop#181\n" +
	"r1 = *(u64 *)(r10 -24)\nif r1 != 42 goto out\nr1 = *(u64 *)(r10 -16)\nif r1 != 42 goto out\nr1 = *(u64 *)(r10 -8)\nif r1 != 7 goto out\nr1 /= 0\nout: r0 = 0\nexit\n" +
	"cb: r9 = r2\ncall bpf_get_prandom_u32#7\nr1 = r0\nr2 = 42\nr0 = 0\nif r1 == 1 goto a\nif r1 == 2 goto b\n*(u64 *)(r9 +16) = r2\nexit\na: *(u64 *)(r9 +0) = r2\nexit\nb: *(u64 *)(r9 +8) = r2\nexit"

// nested runs one round of outer twice, on contexts at fp-8 and fp-16;
// outer adds 1 and runs one round of each of two callbacks that add 100
// and 10: every value of 0, 1, 11, 101, 111 must be reached, no other.
const nested = "*(u64 *)(r10 -8) = 0\n*(u64 *)(r10 -16) = 0\n" +
	"r1 = 1\nr2 = subprog[outer] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\n" +
	"r1 = 1\nr2 = subprog[outer] ll\nr3 = r10\nr3 += -16\nr4 = 0\ncall bpf_loop#181\n" +
	"r1 = *(u64 *)(r10 -8)\nif r1 == 0 goto b\nif r1 == 1 goto b\nif r1 == 11 goto b\nif r1 == 101 goto b\nif r1 == 111 goto b\nr0 /= 0\n" +
	"b: r1 = *(u64 *)(r10 -16)\nif r1 == 0 goto out\nif r1 == 1 goto out\nif r1 == 11 goto out\nif r1 == 101 goto out\nif r1 == 111 goto out\nr0 /= 0\nout: r0 = 0\nexit\n" +
	"outer: r6 = r2\nr1 = *(u64 *)(r6 +0)\nr1 += 1\n*(u64 *)(r6 +0) = r1\n" +
	"r1 = 1\nr2 = subprog[add100] ll\nr3 = r6\nr4 = 0\ncall bpf_loop#181\n" +
	"r1 = 1\nr2 = subprog[add10] ll\nr3 = r6\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\n" +
	"add100: r1 = *(u64 *)(r2 +0)\nr1 += 100\n*(u64 *)(r2 +0) = r1\nr0 = 0\nexit\n" +
	"add10: r1 = *(u64 *)(r2 +0)\nr1 += 10\n*(u64 *)(r2 +0) = r1\nr0 = 0\nexit"

// ptrCtx keeps a pointer to fp-8 in the context at fp-16; the callback's
// first round (index 0) replaces it with r3, later rounds read through it.
const ptrCtx = "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\n*(u64 *)(r10 -16) = r1\n" +
	"r1 = 3\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -16\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\n" +
	"cb: if r1 != 0 goto read\nr3 = 0xdead\n*(u64 *)(r2 +0) = r3\nr0 = 0\nexit\nread: r1 = *(u64 *)(r2 +0)\nr0 = *(u64 *)(r1 +0)\nr0 = 0\nexit"

// Callback loops explored as the kernel does: the helper's return first,
// the callback's entry queued, rounds bounded by bpf_loop's count, and
// only imprecise scalars widened. Values carried through the rounds keep
// their bounds, used after the loop and inside the callback.
func TestSelftestCallbackLoops(t *testing.T) {
	m := []maps.Spec{choice}
	zero := "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\n"
	bpfLoop := func(n int) string { return "r1 = " + itoa(n) + "\ncall bpf_loop#181\n" }
	// A count the verifier does not know.
	random := "r6 = r2\nr7 = r3\ncall bpf_get_prandom_u32#7\nr1 = r0\nr2 = r6\nr3 = r7\nr4 = 0\n"
	inc := "r3 = *(u64 *)(r2 +0)\nr3 += 1\n*(u64 *)(r2 +0) = r3\nr0 = 0\nexit"
	// i goes 0 -> 1 -> 32 and stays: the third round reads past choice.
	machine := func(ctx string) string {
		return "r3 = *(u64 *)(" + ctx + " +0)\nif r3 == 0 goto one\nif r3 == 1 goto big\nr0 = 0\nexit\none: r3 = 1\n*(u64 *)(" + ctx + " +0) = r3\nr0 = 0\nexit\nbig: r3 = 32\n*(u64 *)(" + ctx + " +0) = r3\nr0 = 0\nexit"
	}
	// The callback indexes choice with i, then moves i on while i < 1.
	inside := "r6 = r2\n*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto ret\nr1 = *(u64 *)(r6 +0)\nr0 += r1\nr0 = *(u8 *)(r0 +0)\nif r1 > 0 goto ret\nr1 += 1\n*(u64 *)(r6 +0) = r1\nret: r0 = 0\nexit"
	forEach := "r1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -16\nr4 = 0\ncall bpf_for_each_map_elem#164\n"
	cases := []vcase{
		{name: "one loop counting to 100", asm: callbackLoops(1, 1000, countTo100)},
		{name: "one round keeps the index in bounds", maps: m, asm: carried(zero, bpfLoop(1), false, inc)},
		{name: "two rounds take the index past the value", maps: m, asm: carried(zero, bpfLoop(2), false, inc), err: "invalid access to map value, value_size=2 off=2 size=1", kmsg: true},
		{name: "no rounds keep the initial index", maps: m, asm: carried("r1 = 32\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -8) = 0\n", bpfLoop(100), false, "r1 = 0\n*(u64 *)(r2 +0) = r1\nr0 = 0\nexit"), err: "invalid access to map value, value_size=2 off=32 size=1", kmsg: true},
		{name: "a value the rounds do not change is not widened", maps: m, asm: carried("*(u64 *)(r10 -16) = 0\nr1 = 1\n*(u64 *)(r10 -8) = r1\n", bpfLoop(100), true, inc)},
		{name: "a hundred rounds take the index past the value", maps: m, asm: carried(zero, bpfLoop(100), false, inc), err: "invalid access to map value, value_size=2 off=2 size=1", kmsg: true},
		{name: "state machine through bpf_loop", maps: m, asm: carried(zero, bpfLoop(100), false, machine("r2")), err: "invalid access to map value, value_size=2 off=32 size=1", kmsg: true},
		{name: "state machine through bpf_loop of 1 round", maps: m, asm: carried(zero, bpfLoop(1), false, machine("r2"))},
		{name: "state machine through bpf_loop of 2 rounds", maps: m, asm: carried(zero, bpfLoop(2), false, machine("r2")), err: "invalid access to map value, value_size=2 off=32 size=1", kmsg: true},
		{name: "state machine through for_each_map_elem", maps: m, asm: carried(zero, forEach, false, machine("r4")), err: "invalid access to map value, value_size=2 off=32 size=1", kmsg: true},
		{name: "index used inside the callback stays bounded", maps: m, asm: carried(zero, bpfLoop(100), false, inside)},
		{name: "index used inside the callback, one round too far", maps: m, asm: carried(zero, bpfLoop(100), false, strings.Replace(inside, "if r1 > 0 goto ret", "if r1 > 1 goto ret", 1)), err: "invalid access to map value, value_size=2 off=2 size=1", kmsg: true},
		{name: "unknown count: a precise counter goes past the value", maps: m, asm: carried(zero, random+"call bpf_loop#181\n", false, inc), err: "invalid access to map value, value_size=2 off=2 size=1", kmsg: true},
		{name: "a round changes one of three values", typ: ebpf.SchedCLS, asm: oneOfThree, err: "div by zero", kmsg: true},
		{name: "a round changes one of three values, states kept often", typ: ebpf.SchedCLS, flags: verifier.FlagTestStateFreq, asm: oneOfThree, err: "div by zero", kmsg: true},
		{name: "a round changes one of three values, one round", typ: ebpf.SchedCLS, asm: strings.Replace(oneOfThree, "r1 = 2\n", "r1 = 1\n", 1)},
		{name: "nested loops reach only possible values", asm: nested},
		{name: "a pointer in the context replaced in the first round", asm: ptrCtx, err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "a pointer in the context kept through the rounds", asm: strings.Replace(ptrCtx, "r3 = 0xdead\n*(u64 *)(r2 +0) = r3\n", "", 1)},
		{name: "a callback that stops at once is still explored past its first round", maps: m, asm: carried(zero, bpfLoop(5), false, strings.Replace(inc, "r0 = 0\n", "r0 = 1\n", 1)), err: "invalid access to map value, value_size=2 off=2 size=1", kmsg: true},
		{name: "nested loops reach every possible value", asm: strings.Replace(nested, "if r1 == 111 goto b", "if r1 == 112 goto b", 1), err: "div by zero", kmsg: true},
	}
	if !testing.Short() {
		// Up to a million instructions here and in the kernel: seconds.
		cases = append(cases,
			vcase{name: "two loops counting to 100", asm: callbackLoops(2, 1000, countTo100), err: "BPF program is too large. Processed 1000001 insn", kmsg: true},
			// for_each_map_elem has no count to bound the rounds.
			vcase{name: "for_each_map_elem counting to 100", maps: m, asm: strings.NewReplacer("r1 = 1000\n", "r1 = map[fd:0] ll\n", "bpf_loop#181", "bpf_for_each_map_elem#164").Replace(callbackLoops(1, 1000, strings.ReplaceAll(countTo100, "r2 +0", "r4 +0"))), err: "BPF program is too large. Processed 1000001 insn", kmsg: true},
		)
	}
	runCases(t, cases)
	// What is accepted is accepted comparing every value too: the rounds
	// pruned at the helper call hid nothing.
	for _, c := range cases {
		if c.err != "" {
			continue
		}
		insns, err := isa.Assemble(c.asm)
		if err != nil {
			t.Fatal(err)
		}
		var infos []verifier.MapInfo
		for i, m := range c.maps {
			infos = append(infos, verifier.MapInfo{Name: m.Name, Spec: m, Index: i})
		}
		typ := c.typ
		if typ == ebpf.UnspecifiedProgram {
			typ = ebpf.XDP
		}
		if _, err := verifier.VerifyExact(insns, verifier.Options{Type: progType(typ), Maps: infos, Flags: c.flags}); err != nil {
			t.Errorf("%s: rejected comparing every value: %v", c.name, err)
		}
	}
}
