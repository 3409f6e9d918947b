package rewrite

import (
	"testing"

	"bpfvm/interp"
	"bpfvm/isa"
	"bpfvm/verifier"
	"bpfvm/vm"
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

// Patching any instruction into a longer sequence with the same effect
// keeps the program's result: jumps, calls and function loads that cross
// the patch still reach the same instructions.
func TestPatchKeepsTargets(t *testing.T) {
	src := `
	r0 = 1
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
`
	insns, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
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
