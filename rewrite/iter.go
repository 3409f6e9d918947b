package rewrite

import (
	"bpfvm/isa"
)

// InlineIterNext replaces calls of bpf_iter_num_next with its body, so
// that a bpf_for loop costs a few instructions per round instead of a call
// (the kernel calls the function). The iterator is struct
// bpf_iter_num_kern { int cur; int end; } at R1, as kfuncIterNumNext
// keeps it; like a call, the sequence leaves its result in R0 and
// clobbers only R1-R5 (here R2). It returns the number of calls inlined.
func InlineIterNext(p *Program) (int, error) {
	n := 0
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := p.Insns[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallKfunc) || ins.Imm != isa.KfuncIterNumNext {
			continue
		}
		if err := p.Patch(pc, iterNumNext); err != nil {
			return n, err
		}
		pc += len(iterNumNext) - 1
		n++
	}
	return n, nil
}

// iterNumNext is bpf_iter_num_next inline: the next value is cur+1 in
// 32-bit arithmetic, compared signed with end as the kernel compares their
// 64-bit sign extensions (the same order); at the end both fields become 0
// and the result is NULL.
var iterNumNext = []isa.Instruction{
	{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeW, Dst: isa.R0, Src: isa.R1},          // r0 = it->cur
	{Op: isa.ClassALU | isa.ALUAdd | isa.SrcK, Dst: isa.R0, Imm: 1},                 // w0 += 1
	{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeW, Dst: isa.R2, Src: isa.R1, Off: 4},  // r2 = it->end
	{Op: isa.ClassJMP32 | isa.JumpSGE | isa.SrcX, Dst: isa.R0, Src: isa.R2, Off: 3}, // if w0 s>= w2 goto end
	{Op: isa.ClassSTX | isa.ModeMEM | isa.SizeW, Dst: isa.R1, Src: isa.R0},          // it->cur = w0
	{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R0, Src: isa.R1},          // r0 = &it->cur
	{Op: isa.OpJA, Off: 2}, //
	{Op: isa.ClassST | isa.ModeMEM | isa.SizeDW, Dst: isa.R1}, // end: it->cur = it->end = 0
	{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R0}, // r0 = NULL
}
