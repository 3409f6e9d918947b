// Package rewrite transforms verified programs before they run: it replaces
// instructions with sequences (the kernel's bpf_patch_insn_data), keeping
// jump and call offsets and the verifier's per-instruction facts aligned,
// and implements the rewrites built on that, such as inlining map lookups.
package rewrite

import (
	"fmt"

	"bpfvm/isa"
	"bpfvm/verifier"
)

// Program is a program being rewritten with its per-instruction facts.
type Program struct {
	Insns []isa.Instruction
	Aux   []verifier.InsnAux
	// Orig maps each instruction to the index it had before rewriting, for
	// error messages and dumps (-1 for instructions a patch added).
	Orig []int
}

// New starts rewriting insns; aux must have one entry per instruction.
func New(insns []isa.Instruction, aux []verifier.InsnAux) (*Program, error) {
	if len(aux) != len(insns) {
		return nil, fmt.Errorf("rewrite: %d aux entries for %d instructions", len(aux), len(insns))
	}
	p := &Program{
		Insns: append([]isa.Instruction(nil), insns...),
		Aux:   append([]verifier.InsnAux(nil), aux...),
		Orig:  make([]int, len(insns)),
	}
	for i := range p.Orig {
		p.Orig[i] = i
	}
	return p, nil
}

// Patch replaces the single instruction at pc with seq. Jumps and calls
// elsewhere in the program that cross pc are adjusted, so that a jump to pc
// now lands on the first instruction of seq and a jump past it still lands
// where it did. Offsets inside seq are relative to seq, and seq's jumps must
// stay inside it or leave it only to the instruction after it. The aux entry
// of pc goes to every instruction of seq (they act on its behalf).
func (p *Program) Patch(pc int, seq []isa.Instruction) error {
	if pc < 0 || pc >= len(p.Insns) || len(seq) == 0 {
		return fmt.Errorf("rewrite: patch of %d instructions at %d", len(seq), pc)
	}
	if p.Insns[pc].IsLdImm64() {
		return fmt.Errorf("rewrite: insn %d: cannot patch ld_imm64", pc)
	}
	delta := len(seq) - 1
	if delta != 0 {
		if err := p.adjustOffsets(pc, delta); err != nil {
			return err
		}
	}
	insns := make([]isa.Instruction, 0, len(p.Insns)+delta)
	insns = append(insns, p.Insns[:pc]...)
	insns = append(insns, seq...)
	insns = append(insns, p.Insns[pc+1:]...)
	aux := make([]verifier.InsnAux, 0, len(insns))
	aux = append(aux, p.Aux[:pc]...)
	for range seq {
		aux = append(aux, p.Aux[pc])
	}
	aux = append(aux, p.Aux[pc+1:]...)
	orig := make([]int, 0, len(insns))
	orig = append(orig, p.Orig[:pc]...)
	orig = append(orig, p.Orig[pc])
	for range delta {
		orig = append(orig, -1)
	}
	orig = append(orig, p.Orig[pc+1:]...)
	p.Insns, p.Aux, p.Orig = insns, aux, orig
	return nil
}

// adjustOffsets moves every relative target outside pc that points past pc
// (or every target from past pc that points at or before it) by delta.
func (p *Program) adjustOffsets(pc, delta int) error {
	for i := 0; i < len(p.Insns); i++ {
		ins := &p.Insns[i]
		if i == pc {
			continue
		}
		var target int
		var field string
		switch {
		case ins.IsLocalCall() || ins.IsPseudoFunc():
			target, field = i+1+int(ins.Imm), "imm"
		default:
			t, ok := ins.JumpTarget(i)
			if !ok {
				if ins.IsLdImm64() {
					i++
				}
				continue
			}
			target, field = t, "off"
			if ins.Op == isa.OpJA32 {
				field = "imm"
			}
		}
		// Where the instruction and its target will be after the patch.
		newI, newT := i, target
		if i > pc {
			newI += delta
		}
		if target > pc {
			newT += delta
		}
		off := newT - newI - 1
		if field == "imm" {
			ins.Imm = int32(off)
		} else {
			if off < -1<<15 || off >= 1<<15 {
				return fmt.Errorf("rewrite: jump at %d grows out of range", i)
			}
			ins.Off = int16(off)
		}
		if ins.IsLdImm64() {
			i++
		}
	}
	return nil
}
