package verifier_test

import (
	"strings"
	"testing"

	"bpfvm/maps"
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

// Callback loops explored as the kernel does: the helper's return first,
// the callback's entry queued, rounds bounded by bpf_loop's count, and
// only imprecise scalars widened.
func TestSelftestCallbackLoops(t *testing.T) {
	_ = maps.Spec{}
	cases := []vcase{
		{name: "one loop counting to 100", asm: callbackLoops(1, 1000, countTo100)},
	}
	if !testing.Short() {
		cases = append(cases,
			vcase{name: "two loops counting to 100", asm: callbackLoops(2, 1000, countTo100), err: "BPF program is too large. Processed 1000001 insn", kmsg: true},
		)
	}
	runCases(t, cases)
}
