package verifier_test

import (
	"errors"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// evictedTailCall was found by TestPrecisionAgreesRandom: states evicted
// at a prune point before a later one pruned the current state stayed in
// the list, marked evicted; once their paths ended they were freed while
// listed, and a recycled state (here a pending tail-call return, which
// lost its frames) was compared and explored: "index out of range [-1]".
// The prune point right after bpf_tail_call in h is where it showed.
const evictedTailCall = "*(u64 *)(r10 -64) = r1\n*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr7 = r0\nr1 = 0\nr2 = 0\nr3 = 0\nr6 = 0\nr9 = 0\nif r2 > 7 goto p1\n*(u32 *)(r10 -8) = r3\nr2 += r1\nr1 = r3\nr2 = r10\ncall h\nr1 = r0\nr1 = 0\nr2 = 0\nr3 = 0\nr1 = r2\nr2 = r10\ncall h\nr1 = r0\nr1 = 0\nr2 = 0\nr3 = 0\nr8 = *(u64 *)(r7 +8)\nif r8 > 6 goto a6\nr3 = 48\ngoto b6\na6: r9 = 0\nb6:\nr8 = *(u64 *)(r7 +8)\nif r8 > 2 goto a7\nr1 = 0\ngoto b7\na7: r6 = 8\nb7:\np1:\nr0 = r7\nr0 += r6\nr0 = *(u8 *)(r0 +0)\nr1 = r6\nr2 = r10\ncall h\nr2 = r0\nr1 = 0\nr2 = 0\nr3 = 0\nr1 = r6\nr2 = r7\ncall f\nr1 = 0\nr2 = 0\nr3 = 0\nif r9 != 47 goto p11\nr3 *= 7\np11:\nr8 = *(u64 *)(r7 +8)\nif r8 > 7 goto a13\nr3 = 8\ngoto b13\na13: r2 = 40\nb13:\nr0 = r7\nr0 += r9\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit\nf: r2 += r1\nr0 = *(u8 *)(r2 +0)\nr0 = 0\nexit\nh: r6 = r1\nr6 &= 7\nr1 = *(u64 *)(r2 -64)\nr2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12\nif r6 > 100 goto x\nx:\nr0 = r6\nexit"

func TestEvictedStatesLeaveTheList(t *testing.T) {
	insns, err := isa.Assemble(evictedTailCall)
	if err != nil {
		t.Fatal(err)
	}
	opts := verifier.Options{Type: progtype.XDP, Maps: []verifier.MapInfo{{Name: "val48", Spec: val48}, {Name: "progs", Spec: progArray, Index: 1}}}
	for name, verify := range map[string]func([]isa.Instruction, verifier.Options) (*verifier.Result, error){"usual": verifier.Verify, "exact": verifier.VerifyExact} {
		var ie *verifier.InternalError
		if _, err := verify(insns, opts); errors.As(err, &ie) {
			t.Errorf("%s: %v", name, err)
		}
	}
	runCases(t, []vcase{{name: "kernel", maps: []maps.Spec{val48, progArray}, asm: evictedTailCall}})
}
