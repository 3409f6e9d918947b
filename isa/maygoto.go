package isa

// OpMayGotoTimed is the timed may_goto the rewrite puts in place of
// may_goto (the kernel's encoding has no source bit for it, so the kernel
// rejects it as an unknown opcode, and so does Validate): the jump is taken
// when the frame's hidden countdown (vm.MayGotoCount) is zero, and the
// countdown is refilled while less than Imm microseconds have passed since
// the frame's first may_goto. Only the engines accept it
// (ValidateXlated).
const OpMayGotoTimed uint8 = ClassJMP | JumpCond | SrcX // 0xed

// OpIterNumNext is bpf_iter_num_next as one instruction, which the rewrite
// puts in place of the kfunc's call in verified programs: R0 = next(R1),
// no other register changes. It is an ALU opcode no operation uses (so not
// a jump, which would end the JIT's blocks) and is written with Dst R0,
// Src R1 and Imm KfuncIterNumNext. Only the engines accept it
// (ValidateXlated).
const OpIterNumNext uint8 = ClassALU64 | 0xf0 // 0xf7

// IsIterNumNext reports whether ins is the rewrite's OpIterNumNext.
func (ins Instruction) IsIterNumNext() bool {
	return ins.Op == OpIterNumNext && ins.Dst == R0 && ins.Src == R1 && ins.Off == 0 && ins.Imm == KfuncIterNumNext
}
