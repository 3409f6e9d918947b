package rewrite

import (
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// Arena accesses become ModeArena, casts to the kernel's space 32-bit
// moves, and 64-bit arithmetic on arena pointers is zero-extended, with
// jumps over it kept pointing where they did.
func TestLowerArena(t *testing.T) {
	prog, err := isa.Assemble(`
		r1 = addr_space_cast(r1, 0, 1)
		r2 = addr_space_cast(r1, 1, 0)
		if r3 == 0 goto +1
		r1 += r3
		r0 = *(u32 *)(r1 +8)
		*(u64 *)(r1 -4) = r0
		exit`)
	if err != nil {
		t.Fatal(err)
	}
	aux := make([]verifier.InsnAux, len(prog))
	for _, pc := range []int{4, 5} {
		aux[pc].PtrType = verifier.PtrToArena
	}
	aux[3].ArenaZext = true
	LowerArena(prog, aux, false)
	p, err := New(prog, aux)
	if err != nil {
		t.Fatal(err)
	}
	if err := ZextArena(p); err != nil {
		t.Fatal(err)
	}
	want, err := isa.Assemble(`
		w1 = w1
		r2 = addr_space_cast(r1, 1, 0)
		if r3 == 0 goto +2
		r1 += r3
		w1 = w1
		r0 = *(u32 *)(r1 +8)
		*(u64 *)(r1 -4) = r0
		exit`)
	if err != nil {
		t.Fatal(err)
	}
	want[5].Op = want[5].Op&^0xe0 | isa.ModeArena
	want[6].Op = want[6].Op&^0xe0 | isa.ModeArena
	if len(p.Insns) != len(want) {
		t.Fatalf("%d instructions, want %d:\n%s", len(p.Insns), len(want), isa.Format(p.Insns, 0, nil))
	}
	for i := range want {
		if p.Insns[i] != want[i] {
			t.Errorf("insn %d: %s, want %s", i, isa.Format(p.Insns[i:i+1], 0, nil), isa.Format(want[i:i+1], 0, nil))
		}
	}
	// Without user conversion the other cast keeps the low half too.
	prog2 := []isa.Instruction{{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: 2, Src: 1, Off: isa.AddrSpaceCast, Imm: isa.CastToUser}, {Op: isa.OpExit}}
	LowerArena(prog2, make([]verifier.InsnAux, 2), true)
	if w := (isa.Instruction{Op: isa.ClassALU | isa.ALUMov | isa.SrcX, Dst: 2, Src: 1}); prog2[0] != w {
		t.Errorf("cast without user conversion: %v", prog2[0])
	}
}
