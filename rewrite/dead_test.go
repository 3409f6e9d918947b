package rewrite

import (
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// SanitizeDeadCode turns every instruction not seen (both slots of an
// LD_IMM64) into isa.OpDead and, for privileged programs only, hard-wires
// conditional jumps (64- and 32-bit) whose fall-through or target was never
// reached; goto, may_goto and jumps with both sides seen stay.
func TestSanitizeDeadCode(t *testing.T) {
	insns, err := isa.Assemble(`
		r0 = 0
		if r0 == 1 goto a
		if w0 == 0 goto c
		r0 = 5
		exit
	c:	may_goto d
	d:	if r0 > 2 goto e
		goto e
	a:	r1 = 0 ll
		exit
	e:	exit
	`)
	if err != nil {
		t.Fatal(err)
	}
	// Not seen: the fall-through of the second branch and a (the 64-bit
	// load, whose second slot the verifier never marks, and exit). The
	// first branch's target was never reached, the second's
	// fall-through; the last branch took both sides.
	unseen := map[int]bool{3: true, 4: true, 8: true, 9: true, 10: true}
	aux := make([]verifier.InsnAux, len(insns))
	for pc := range aux {
		aux[pc].Seen = !unseen[pc]
	}
	for _, priv := range []bool{true, false} {
		p, err := New(insns, aux)
		if err != nil {
			t.Fatal(err)
		}
		dead, wired := SanitizeDeadCode(p, priv)
		if dead != 5 {
			t.Errorf("priv=%v: %d dead, want 5", priv, dead)
		}
		for pc := range insns {
			want := insns[pc]
			switch {
			case unseen[pc]:
				want = isa.Instruction{Op: isa.OpDead}
			case priv && pc == 1:
				want = isa.Instruction{Op: isa.OpJA} // falls through
			case priv && pc == 2:
				want = isa.Instruction{Op: isa.OpJA, Off: insns[2].Off}
			}
			if p.Insns[pc] != want {
				t.Errorf("priv=%v: insn %d is %v, want %v", priv, pc, p.Insns[pc], want)
			}
		}
		if w := map[bool]int{true: 2, false: 0}[priv]; wired != w {
			t.Errorf("priv=%v: %d hard-wired, want %d", priv, wired, w)
		}
		if err := isa.ValidateXlated(p.Insns); err != nil {
			t.Errorf("priv=%v: %v", priv, err)
		}
	}
}
