package verifier_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// Precision tracking: in each case two paths meet at a prune point with
// different values in a scalar that matters only later. The first path
// explored (the fall-through) is safe; the second is not, and must not be
// pruned: the later use has to mark the scalar, and what it came from,
// precise in the remembered state.
func TestSelftestPrecise(t *testing.T) {
	m := []maps.Spec{val48}
	// r6 = 0 on the first path, 100 on the second; both reach join.
	fork := valPre + "r7 = r0\nr8 = *(u64 *)(r0 +8)\nif r8 > 5 goto second\nr6 = 0\ngoto join\nsecond: r6 = 100\njoin: "
	use := "r0 = r7\nr0 += r6\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		{name: "offset from a register", maps: m, asm: fork + "r1 = r8\n" + use, err: "invalid access to map value"},
		{name: "offset through a spill", maps: m, asm: fork + "*(u64 *)(r10 -16) = r6\nr6 = 0\nr1 = r8\nr6 = *(u64 *)(r10 -16)\n" + use, err: "invalid access to map value"},
		{name: "offset through a spill before the join", maps: m, asm: valPre + "r7 = r0\nr8 = *(u64 *)(r0 +8)\nif r8 > 5 goto second\nr1 = 0\n*(u64 *)(r10 -16) = r1\ngoto join\nsecond: r1 = 100\n*(u64 *)(r10 -16) = r1\njoin: r1 = 0\nr6 = *(u64 *)(r10 -16)\n" + use, err: "invalid access to map value"},
		{name: "offset through arithmetic", maps: m, asm: fork + "r2 = 3\nr2 += r6\nr6 = r2\n" + use, err: "invalid access to map value"},
		{name: "offset through a function argument", maps: m, asm: fork + "r1 = r7\nr2 = r6\ncall f\nout: r0 = 0\nexit\nf: r1 += r2\nr0 = *(u8 *)(r1 +0)\nr0 = 0\nexit", err: "invalid access to map value"},
		{name: "offset through a function result", maps: m, asm: fork + "r1 = r6\ncall f\nr6 = r0\n" + use + "\nf: r0 = r1\nexit", err: "invalid access to map value"},
		{name: "branch decided by the value", maps: m, asm: fork + "if r6 == 0 goto out\nr0 = *(u64 *)(r7 +48)\nout: r0 = 0\nexit", err: "invalid access to map value"},
		{name: "branch decided by a register comparison", maps: m, asm: fork + "r2 = 0\nif r6 == r2 goto out\nr0 = *(u64 *)(r7 +48)\nout: r0 = 0\nexit", err: "invalid access to map value"},
		{name: "zero bytes from a register", maps: m, asm: fork + "*(u32 *)(r10 -16) = r6\nr6 = *(u32 *)(r10 -16)\n" + use, err: "invalid access to map value"},
		{name: "helper size", maps: m, asm: fork + "r6 += 8\nr1 = r7\nr2 = r6\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nout: r0 = 0\nexit", err: "invalid access to map value"},
		{name: "linked registers", maps: m, asm: valPre + "r7 = r0\nr8 = *(u64 *)(r0 +8)\nr6 = *(u64 *)(r0 +16)\nif r8 > 5 goto second\nr9 = r6\ngoto join\nsecond: r9 = *(u64 *)(r0 +24)\njoin: if r9 > 7 goto out\n" + use, err: "unbounded min value"},
		{name: "constant array key", maps: []maps.Spec{arrayMap}, asm: "r1 = *(u32 *)(r1 +0)\nif r1 > 5 goto second\nr6 = 0\ngoto join\nsecond: r6 = 7\njoin: *(u32 *)(r10 -4) = r6\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr0 = *(u64 *)(r0 +0)\nr0 = 0\nexit", err: "invalid mem access 'map_value_or_null'"},
		// Both paths are safe: the second is pruned.
		{name: "imprecise value pruned", maps: m, asm: fork + "*(u64 *)(r7 +0) = r6\nout: r0 = 0\nexit"},
	})
}

// TestPrecisionPrunes checks that scalars nothing depends on do not keep
// states apart: a chain of diamonds each setting a stored value one way or
// the other takes linear, not exponential, work.
func TestPrecisionPrunes(t *testing.T) {
	var b strings.Builder
	b.WriteString(lookup4 + "if r0 == 0 goto out\nr7 = r0\n")
	const n = 24
	for i := range n {
		fmt.Fprintf(&b, "r8 = *(u64 *)(r7 +8)\nif r8 > %d goto a%d\nr6 = %d\ngoto b%d\na%d: r6 = %d\nb%d: *(u64 *)(r7 +0) = r6\n", i, i, i, i, i, 1000+i, i)
	}
	b.WriteString("out: r0 = 0\nexit")
	insns, err := isa.Assemble(b.String())
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, Maps: []verifier.MapInfo{{Name: "val48", Spec: val48}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Processed > 20*n {
		t.Errorf("processed %d instructions, want at most %d", res.Stats.Processed, 20*n)
	}
	if res.Stats.HistoryEntries == 0 || res.Stats.HistoryPeak == 0 || res.Stats.HistoryAllocs == 0 {
		t.Errorf("history statistics not counted: %+v", res.Stats)
	}
}

// TestStackLivenessPrunes checks that stack slots no path reads again do
// not keep states apart: each diamond leaves a pointer or a scalar in
// fp-16, which is overwritten before it is read.
func TestStackLivenessPrunes(t *testing.T) {
	var b strings.Builder
	b.WriteString(lookup4 + "if r0 == 0 goto out\nr7 = r0\n")
	const n = 24
	for i := range n {
		fmt.Fprintf(&b, "r8 = *(u64 *)(r7 +8)\nif r8 > %d goto a%d\n*(u64 *)(r10 -16) = r7\ngoto b%d\na%d: *(u64 *)(r10 -16) = r8\nb%d: *(u64 *)(r10 -16) = 0\nr1 = *(u64 *)(r10 -16)\n", i, i, i, i, i)
	}
	b.WriteString("out: r0 = 0\nexit")
	insns, err := isa.Assemble(b.String())
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, Maps: []verifier.MapInfo{{Name: "val48", Spec: val48}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Processed > 20*n {
		t.Errorf("processed %d instructions, want at most %d", res.Stats.Processed, 20*n)
	}
}

// TestSelftestStackLiveness: slots read later in ways the static pass
// cannot see exactly stay live.
func TestSelftestStackLiveness(t *testing.T) {
	m := []maps.Spec{val48}
	// fp-16 holds 0 on the first path and 100 on the second.
	fork := valPre + "r7 = r0\nr8 = *(u64 *)(r0 +8)\nr1 = 0\nif r8 > 5 goto second\n*(u64 *)(r10 -16) = r1\ngoto join\nsecond: r1 = 100\n*(u64 *)(r10 -16) = r1\njoin: r1 = 0\n"
	use := "r0 = r7\nr0 += r6\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		{name: "read through a spilled stack pointer", maps: m, asm: fork + "r2 = r10\nr2 += -16\n*(u64 *)(r10 -8) = r2\nr3 = *(u64 *)(r10 -8)\nr6 = *(u64 *)(r3 +0)\n" + use, err: "invalid access to map value"},
		{name: "read by a function", maps: m, asm: fork + "r1 = r10\nr1 += -16\ncall f\nr6 = r0\n" + use + "\nf: r0 = *(u64 *)(r1 +0)\nexit", err: "invalid access to map value"},
		{name: "read by a function through its stack", maps: m, asm: fork + "r1 = r10\nr1 += -16\ncall f\nr6 = *(u64 *)(r10 -24)\n" + use + "\nf: r2 = r10\nr2 += -8\n*(u64 *)(r2 +0) = r1\nr3 = *(u64 *)(r10 -8)\nr4 = *(u64 *)(r3 +0)\n*(u64 *)(r3 -8) = r4\nr0 = 0\nexit", err: "invalid access to map value"},
	})
}
