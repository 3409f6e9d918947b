package rewrite

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// Spectre applies the Spectre mitigations the verifier asked for in an
// unprivileged program (verifier/spectre.go), as the kernel's
// convert_ctx_accesses and do_misc_fixups do:
//
//   - a speculation barrier (isa.OpNospec) before every instruction a
//     speculative path failed at (InsnAux.Nospec), which jumps to it land
//     on;
//   - a barrier after every store Spectre v4 could bypass
//     (InsnAux.NospecResult);
//   - pointer arithmetic with a register (InsnAux.ALUState) becomes
//     isa.OpMaskedALU, whose offset is masked to InsnAux.ALULimit, where
//     the kernel emits the same masking as a sequence of ALU instructions
//     on its hidden BPF_REG_AX.
//
// An instruction the verifier never reached keeps its barrier, as in the
// kernel, where sanitize_dead_code ran first. A first half of an LD_IMM64
// cannot be patched and gets no barrier (no speculative path fails
// there: loading a constant cannot). It returns the number of barriers
// and of masked instructions, and must run before any patch, while every
// instruction's aux is its own.
func Spectre(p *Program) (barriers, masked int, err error) {
	var rs []Replacement
	for pc := 0; pc < len(p.Insns); pc++ {
		ins, a := p.Insns[pc], p.Aux[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		var seq []isa.Instruction
		if a.Nospec {
			seq = append(seq, isa.Instruction{Op: isa.OpNospec})
			barriers++
		}
		if m, ok := maskedALU(ins, a); ok {
			ins = m
			masked++
		}
		seq = append(seq, ins)
		if a.NospecResult && isMemStore(ins) {
			seq = append(seq, isa.Instruction{Op: isa.OpNospec})
			barriers++
		}
		if len(seq) > 1 || seq[0] != p.Insns[pc] {
			rs = append(rs, Replacement{PC: pc, Seq: seq})
		}
	}
	if len(rs) == 0 {
		return 0, 0, nil
	}
	if err := p.PatchAll(rs); err != nil {
		return 0, 0, err
	}
	for pc, ins := range p.Insns {
		if ins.Op == isa.OpNospec {
			// A barrier acts for no instruction: the passes after
			// this one must not take it for the one it guards.
			p.Aux[pc] = verifier.InsnAux{Seen: p.Aux[pc].Seen}
		}
	}
	return barriers, masked, nil
}

// maskedALU is the masked form of pointer arithmetic the verifier asked
// to sanitize (the kernel's BPF_ALU_* states; scalar additions have
// nothing to mask).
func maskedALU(ins isa.Instruction, a verifier.InsnAux) (isa.Instruction, bool) {
	s := a.ALUState
	if s == 0 || s&verifier.ALUNonPointer != 0 {
		return ins, false
	}
	if ins.Op != isa.ClassALU64|isa.ALUAdd|isa.SrcX && ins.Op != isa.ClassALU64|isa.ALUSub|isa.SrcX {
		return ins, false
	}
	var flags int16
	if ins.Op&0xf0 == isa.ALUSub {
		flags |= isa.MaskSub
	}
	if s&verifier.ALUNegValue != 0 {
		flags |= isa.MaskNeg
	}
	if s&verifier.ALUSanitizeDst != 0 {
		flags |= isa.MaskOffDst
	}
	if s&verifier.ALUImmediate != 0 {
		flags |= isa.MaskImm
	}
	return isa.Instruction{Op: isa.OpMaskedALU, Dst: ins.Dst, Src: ins.Src, Off: flags, Imm: int32(a.ALULimit)}, true
}

// isMemStore reports whether ins is a plain store (BPF_ST or BPF_STX in
// BPF_MEM mode), the writes the kernel puts a Spectre v4 barrier after.
func isMemStore(ins isa.Instruction) bool {
	c := ins.Class()
	return (c == isa.ClassST || c == isa.ClassSTX) && ins.Op&0xe0 == isa.ModeMEM
}
