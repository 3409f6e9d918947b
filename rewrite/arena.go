package rewrite

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// LowerArena turns the verified program's arena accesses into what the
// engines run, in place, one instruction for one (as the kernel's
// convert_ctx_accesses and do_misc_fixups): loads and stores through
// arena pointers (verifier.PtrToArena) become isa.ModeArena accesses
// (sign-extending loads ModeArenaSX, atomics ModeArenaAtomic), which add
// the arena's base to the pointer's low 32 bits; a cast to the
// kernel's address space keeps the low 32 bits (w = w); a cast to the
// user's stays for the engines (the user address's upper half is the
// run's), or keeps the low 32 bits too with noUserConv
// (BPF_F_NO_USER_CONV).
func LowerArena(insns []isa.Instruction, aux []verifier.InsnAux, noUserConv bool) {
	for pc := range insns {
		ins := &insns[pc]
		if ins.IsLdImm64() {
			continue
		}
		if ins.IsAddrSpaceCast() {
			if ins.Imm == isa.CastToKernel || noUserConv {
				*ins = isa.Instruction{Op: isa.ClassALU | isa.ALUMov | isa.SrcX, Dst: ins.Dst, Src: ins.Src}
			}
			continue
		}
		if pc >= len(aux) || aux[pc].PtrType != verifier.PtrToArena {
			continue
		}
		switch c, m := ins.Class(), ins.Op&0xe0; {
		case c == isa.ClassLDX && m == isa.ModeMEM,
			(c == isa.ClassST || c == isa.ClassSTX) && m == isa.ModeMEM:
			ins.Op = ins.Op&^0xe0 | isa.ModeArena
		case c == isa.ClassLDX && m == isa.ModeMEMSX:
			ins.Op = ins.Op&^0xe0 | isa.ModeArenaSX
		case c == isa.ClassSTX && m == isa.ModeATOMIC:
			ins.Op = ins.Op&^0xe0 | isa.ModeArenaAtomic
		}
	}
}

// ZextArena keeps only the low 32 bits of the result of each 64-bit ALU
// instruction on an arena pointer (verifier.InsnAux.ArenaZext), as the
// kernel's zero extension after them (needs_zext): the instruction is
// followed by w = w.
func ZextArena(p *Program) error {
	var rs []Replacement
	for pc, ins := range p.Insns {
		if pc < len(p.Aux) && p.Aux[pc].ArenaZext && ins.Class() == isa.ClassALU64 {
			zext := isa.Instruction{Op: isa.ClassALU | isa.ALUMov | isa.SrcX, Dst: ins.Dst, Src: ins.Dst}
			rs = append(rs, Replacement{PC: pc, Seq: []isa.Instruction{ins, zext}})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	return p.PatchAll(rs)
}
