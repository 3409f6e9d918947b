package rewrite

import (
	"errors"
	"slices"
	"testing"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

func run(t *testing.T, insns []isa.Instruction) uint64 {
	t.Helper()
	p, err := interp.New(insns, nil)
	if err != nil {
		t.Fatal(err)
	}
	stack, err := vm.Alloc(vm.MaxFrames * vm.StackSize)
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Free()
	env := &vm.Env{Checked: true, Stack: vm.Region{Start: stack.Addr(), End: stack.Addr() + vm.MaxFrames*vm.StackSize, Writable: true}}
	r0, err := p.Run(env, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r0
}

// patchProgram is a program with jumps, a bpf-to-bpf call and a function
// reference (insn 1, to the called subprogram) crossing most instructions.
func patchProgram(t *testing.T) []isa.Instruction {
	t.Helper()
	insns, err := isa.Assemble(`
	r0 = 1
	r8 = 0 ll
	r6 = 0
	if r6 == 0 goto skip
	r0 = 100
skip:
	r0 += 2
	call f
	r0 += r7
	goto end
	r0 = 1000
end:
	exit
f:
	r7 = 4
	if r7 > 3 goto big
	r7 = 0
big:
	r0 += 8
	exit
`)
	if err != nil {
		t.Fatal(err)
	}
	for pc, ins := range insns {
		if ins.IsLocalCall() {
			insns[1].Src = isa.Register(isa.PseudoFunc)
			insns[1].Imm = int32(pc+int(ins.Imm)) - 1
		}
	}
	return insns
}

// Patching any instruction into a longer sequence with the same effect
// keeps the program's result: jumps, calls and function loads that cross
// the patch still reach the same instructions.
func TestPatchKeepsTargets(t *testing.T) {
	insns := patchProgram(t)
	want := run(t, insns)
	for pc, ins := range insns {
		if ins.Op&0x07 != isa.ClassALU64 || ins.IsLdImm64() {
			continue
		}
		p, err := New(insns, make([]verifier.InsnAux, len(insns)))
		if err != nil {
			t.Fatal(err)
		}
		nop := isa.Instruction{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcK, Dst: isa.R9}
		if err := p.Patch(pc, []isa.Instruction{nop, ins, nop}); err != nil {
			t.Fatal(err)
		}
		if err := isa.Validate(p.Insns); err != nil {
			t.Fatalf("patch at %d: %v", pc, err)
		}
		if got := run(t, p.Insns); got != want {
			t.Errorf("patch at %d: result %d, want %d", pc, got, want)
		}
		if len(p.Aux) != len(p.Insns) || len(p.Orig) != len(p.Insns) {
			t.Errorf("patch at %d: aux and orig out of step", pc)
		}
	}
}

// Patching several instructions at once gives the program patching them
// one by one gives, function references (ld_imm64 pseudo func) included.
func TestPatchAllMatchesPatch(t *testing.T) {
	insns := patchProgram(t)
	want := run(t, insns)
	nop := isa.Instruction{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcK, Dst: isa.R9}
	var rs []Replacement
	for pc, ins := range insns {
		if ins.Op&0x07 == isa.ClassALU64 && pc%2 == 0 {
			rs = append(rs, Replacement{pc, []isa.Instruction{nop, ins, nop, nop}})
		}
	}
	all, err := New(insns, make([]verifier.InsnAux, len(insns)))
	if err != nil {
		t.Fatal(err)
	}
	if err := all.PatchAll(rs); err != nil {
		t.Fatal(err)
	}
	one, _ := New(insns, make([]verifier.InsnAux, len(insns)))
	for i := len(rs) - 1; i >= 0; i-- { // from the end, so earlier pcs stay put
		if err := one.Patch(rs[i].PC, rs[i].Seq); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(all.Insns, one.Insns) || !slices.Equal(all.Orig, one.Orig) {
		t.Errorf("PatchAll and Patch differ:\n%v\n%v", all.Insns, one.Insns)
	}
	if err := isa.Validate(all.Insns); err != nil {
		t.Fatal(err)
	}
	if got := run(t, all.Insns); got != want {
		t.Errorf("patched program returns %d, want %d", got, want)
	}
	for pc, ins := range all.Insns {
		if ins.IsPseudoFunc() {
			if target := pc + 1 + int(ins.Imm); all.Orig[target] != 1+int(insns[1].Imm)+1 {
				t.Errorf("function reference now points at original insn %d", all.Orig[target])
			}
		}
	}
}

// A patch that would push a jump's target out of 16-bit reach fails with
// ErrJumpRange and leaves the program as it was.
func TestPatchAllJumpRange(t *testing.T) {
	mov := isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R0}
	insns := []isa.Instruction{{Op: isa.OpJA, Off: 1<<15 - 1}}
	for range 1<<15 - 1 {
		insns = append(insns, mov)
	}
	insns = append(insns, mov, isa.Instruction{Op: isa.OpExit})
	p, err := New(insns, make([]verifier.InsnAux, len(insns)))
	if err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(p.Insns)
	err = p.PatchAll([]Replacement{{5, []isa.Instruction{mov, mov}}})
	if !errors.Is(err, ErrJumpRange) {
		t.Fatalf("PatchAll: %v, want ErrJumpRange", err)
	}
	if !slices.Equal(p.Insns, before) || len(p.Aux) != len(before) {
		t.Error("failed patch changed the program")
	}
}
