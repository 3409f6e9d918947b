//go:build amd64 && linux

package amd64

import (
	"errors"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// isa.OpDead stops the run with vm.ErrDeadCode naming its instruction, on
// both engines and in both modes, wherever it is: after a taken jump, in a
// subprogram, as the last instruction; code not reaching it runs as usual.
func TestDeadCode(t *testing.T) {
	dead := isa.Instruction{Op: isa.OpDead}
	for _, c := range []struct {
		name string
		src  string
		at   int // the instruction replaced by dead
		pc   int // where the run stops; -1 for none
		r0   uint64
	}{
		{"reached", "r0 = 1\nr0 += 1\nexit", 1, 1, 0},
		{"jumped to", "r0 = 1\nif r0 == 1 goto x\nexit\nx: r0 = 5\nexit", 3, 3, 0},
		{"jumped over", "r0 = 1\nif r0 == 1 goto x\nr0 = 5\nr0 = 7\nx: r0 += 8\nexit", 3, -1, 9},
		{"in a subprogram", "r0 = 1\ncall f\nexit\nf: r0 = 4\nr0 += 1\nexit", 4, 4, 0},
		{"last", "r0 = 1\nif r0 == 1 goto x\nexit\nx: r0 = 2\nexit", 4, 4, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.src)
			if err != nil {
				t.Fatal(err)
			}
			prog := append([]isa.Instruction(nil), insns...)
			prog[c.at] = dead
			io, _ := diff(t, diffCase{prog: prog})
			var re *vm.RunError
			switch {
			case c.pc < 0 && (io.err != nil || io.r0 != c.r0):
				t.Errorf("run: %v, r0 %d; want %d", io.err, io.r0, c.r0)
			case c.pc >= 0 && (!errors.As(io.err, &re) || !errors.Is(io.err, vm.ErrDeadCode) || re.PC != c.pc):
				t.Errorf("run: %v, want %v at insn %d", io.err, vm.ErrDeadCode, c.pc)
			}
		})
	}
	if err := isa.Validate([]isa.Instruction{dead}); err == nil {
		t.Error("Validate accepts the internal dead instruction")
	}
	if err := isa.ValidateXlated([]isa.Instruction{dead}); err != nil {
		t.Errorf("ValidateXlated: %v", err)
	}
	if err := isa.ValidateXlated([]isa.Instruction{{Op: isa.OpDead, Imm: 1}, {Op: isa.OpExit}}); err == nil {
		t.Error("ValidateXlated accepts dead with reserved fields set")
	}
}
