package verifier_test

import (
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// TestAuxConstKey checks the per-instruction summary of a lookup's key: it
// is constant only when every path that reached the call agreed on it, in
// whichever order the paths were explored. (A key is constant when it is a
// spilled constant, at an 8-byte aligned slot, as in the kernel.)
func TestAuxConstKey(t *testing.T) {
	arr := maps.Spec{Name: "arr", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 16}
	// r9 (0 or 1) offsets a stack read after the call, so it is precise
	// and the two paths are not pruned at the join: both reach the call.
	const lookup = "join: r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nr1 = r10\nr1 += r9\nr0 = *(u8 *)(r1 -16)\nr0 = 0\nexit"
	for _, c := range []struct {
		name, paths string
		want        bool
		key         uint64
	}{
		{"one constant", "r9 = 0\nr2 = 3\n*(u32 *)(r10 -8) = r2\n", true, 3},
		{"same constant on both paths", "if r6 > 5 goto b\nr2 = 3\n*(u32 *)(r10 -8) = r2\nr9 = 0\ngoto join\nb: r9 = 1\nr2 = 3\n*(u32 *)(r10 -8) = r2\n", true, 3},
		{"variable, then constant", "if r6 > 5 goto b\n*(u32 *)(r10 -8) = r6\nr9 = 0\ngoto join\nb: r9 = 1\nr2 = 7\n*(u32 *)(r10 -8) = r2\n", false, 0},
		{"constant, then variable", "if r6 > 5 goto b\nr2 = 7\n*(u32 *)(r10 -8) = r2\nr9 = 0\ngoto join\nb: r9 = 1\n*(u32 *)(r10 -8) = r6\n", false, 0},
		{"two constants", "if r6 > 5 goto b\nr2 = 1\n*(u32 *)(r10 -8) = r2\nr9 = 0\ngoto join\nb: r9 = 1\nr2 = 7\n*(u32 *)(r10 -8) = r2\n", false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble("r6 = *(u32 *)(r1 +12)\nr2 = 0\n*(u64 *)(r10 -16) = r2\n" + c.paths + lookup)
			if err != nil {
				t.Fatal(err)
			}
			res, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, Maps: []verifier.MapInfo{{Name: "arr", Spec: arr}}})
			if err != nil {
				t.Fatal(err)
			}
			call := len(insns) - 6
			if insns[call].Op != isa.OpCall {
				t.Fatalf("insn %d is not the call", call)
			}
			a := res.Aux[call]
			if a.HasConstKey != c.want || c.want && a.ConstKey != c.key {
				t.Errorf("HasConstKey %v ConstKey %d, want %v %d", a.HasConstKey, a.ConstKey, c.want, c.key)
			}
		})
	}
}
