package rewrite

import (
	"slices"
	"testing"
	"time"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// ExpandMayGoto gives each function using may_goto a prologue that calls
// and function loads enter and jumps to the function's first instruction
// skip, and replaces may_goto with the timed form.
func TestExpandMayGoto(t *testing.T) {
	insns, err := isa.Assemble(`
		r6 = 0
		r1 = 0
		call pc+3
		r0 += r6
		r6 += 1
		exit
		r1 += 1
		may_goto pc+1
		goto pc-3
		r0 = r1
		exit
	`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(insns, make([]verifier.InsnAux, len(insns)))
	if err != nil {
		t.Fatal(err)
	}
	n, err := ExpandMayGoto(p, time.Millisecond)
	if err != nil || n != 1 {
		t.Fatalf("ExpandMayGoto: %d, %v", n, err)
	}
	want := []isa.Instruction{
		insns[0], insns[1],
		{Op: isa.OpCall, Src: isa.Register(isa.CallLocal), Imm: 3}, // still to the prologue
		insns[3], insns[4], insns[5],
		{Op: isa.ClassST | isa.ModeMEM | isa.SizeDW, Dst: isa.R10, Off: vm.MayGotoCount, Imm: vm.MayGotoRefill},
		{Op: isa.ClassST | isa.ModeMEM | isa.SizeDW, Dst: isa.R10, Off: vm.MayGotoStart},
		insns[6],
		{Op: isa.OpMayGotoTimed, Off: 1, Imm: 1000},
		{Op: isa.OpJA, Off: -3}, // back to the function's first instruction, after the prologue
		insns[9], insns[10],
	}
	if len(p.Insns) != len(want) {
		t.Fatalf("%d instructions, want %d", len(p.Insns), len(want))
	}
	for i := range want {
		if p.Insns[i] != want[i] {
			t.Errorf("insn %d: %+v, want %+v", i, p.Insns[i], want[i])
		}
	}
	if p.Orig[6] != -1 || p.Orig[7] != -1 || p.Orig[8] != 6 {
		t.Errorf("orig %v", p.Orig)
	}
	if err := isa.ValidateXlated(p.Insns); err != nil {
		t.Error(err)
	}
	if err := isa.Validate(p.Insns); err == nil {
		t.Error("the timed may_goto passes the loaders' validation")
	}
	// The callee's loop ends after a multiple (at least 2) of the refill
	// and returns rounds + 1.
	if r0 := run(t, p.Insns); (r0-1)%vm.MayGotoRefill != 0 || r0 < 2*vm.MayGotoRefill {
		t.Errorf("r0 = %d", r0)
	}
}

// InlineLoops replaces bpf_loop calls whose callback the verifier proved,
// and leaves the others.
func TestInlineLoops(t *testing.T) {
	insns, err := isa.Assemble(`
		r1 = 5
		r2 = 0
		r3 = 0
		r4 = 0
		call bpf_loop
		exit
		r0 = 0
		exit
	`)
	if err != nil {
		t.Fatal(err)
	}
	aux := make([]verifier.InsnAux, len(insns))
	aux[4].LoopCallback = 6 + 1
	p, err := New(insns, aux)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := InlineLoops(p, nil); n != 1 || err != nil {
		t.Fatalf("InlineLoops: %d, %v", n, err)
	}
	if r0 := run(t, p.Insns); r0 != 5 {
		t.Errorf("r0 = %d, want 5 calls", r0)
	}
	aux[4].LoopNoInline = true
	p, _ = New(insns, aux)
	if n, _ := InlineLoops(p, nil); n != 0 {
		t.Errorf("inlined %d calls the verifier did not prove", n)
	}
}

// InlineLoops finds each callback through the patcher's mapping, whatever
// earlier patches (here a grown instruction before both loops, as an
// inlined map lookup is) and the other inlined loop moved.
func TestInlineLoopsAfterPatches(t *testing.T) {
	insns, err := isa.Assemble(`
		r9 = 0
		r1 = 5
		r2 = 0
		r3 = 0
		r4 = 0
		call bpf_loop
		r6 = r0
		r6 *= 100
		r1 = 5
		r2 = 0
		r3 = 0
		r4 = 0
		call bpf_loop
		r0 += r6
		r0 += r9
		exit
	cont:
		r0 = 0
		exit
	stop:
		r0 = 1
		exit
	`)
	if err != nil {
		t.Fatal(err)
	}
	aux := make([]verifier.InsnAux, len(insns))
	aux[5].LoopCallback = 16 + 1  // cont: every round
	aux[12].LoopCallback = 18 + 1 // stop: one round
	for _, grow := range []int{0, 1, 7, 40} {
		p, err := New(insns, aux)
		if err != nil {
			t.Fatal(err)
		}
		if grow > 0 {
			seq := slices.Repeat([]isa.Instruction{{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcK, Dst: isa.R9, Imm: 0}}, grow)
			if err := p.Patch(0, seq); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := InlineLoops(p, nil); n != 2 || err != nil {
			t.Fatalf("grow %d: InlineLoops: %d, %v", grow, n, err)
		}
		for o := range insns {
			at, ok := p.At(o)
			if !ok || p.Orig[at] != o && !(o == 0 && grow > 0) {
				t.Fatalf("grow %d: At(%d) = %d, %v; Orig there %d", grow, o, at, ok, p.Orig[at])
			}
		}
		if r0 := run(t, p.Insns); r0 != 501 {
			t.Errorf("grow %d: r0 = %d, want 501 (5 rounds, then 1)", grow, r0)
		}
	}
}

// At follows every patch and prologue: an original instruction maps to the
// start of its replacement, a function's first instruction to its prologue.
func TestAt(t *testing.T) {
	insns := patchProgram(t)
	p, err := New(insns, make([]verifier.InsnAux, len(insns)))
	if err != nil {
		t.Fatal(err)
	}
	two := []isa.Instruction{{Op: isa.OpJA}, {Op: isa.OpJA}}
	if err := p.PatchAll([]Replacement{{0, two}, {3, two}}); err != nil {
		t.Fatal(err)
	}
	f := len(insns) - 5 // the subprogram's first instruction
	want := map[int]int{0: 0, 1: 2, 3: 4, 4: 6, f: f + 2}
	for o, w := range want {
		if at, _ := p.At(o); at != w {
			t.Errorf("after patches: At(%d) = %d, want %d", o, at, w)
		}
	}
	if err := p.insertPrologue(f+2, two); err != nil {
		t.Fatal(err)
	}
	want[f], want[f+1] = f+2, f+5
	for o, w := range want {
		if at, _ := p.At(o); at != w {
			t.Errorf("after prologue: At(%d) = %d, want %d", o, at, w)
		}
	}
	if _, ok := p.At(len(insns)); ok {
		t.Error("At past the program")
	}
}
