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

// ModeTrusted is the mode of an internal load (LDX) or store (ST) that the
// rewrite emits inside an inlined helper, whose address it computes from
// load-time constants and the links of the map's own structure, never
// from a program's value: the bucket heads and elements of a hash lookup,
// the slots of an array of maps. The engines run it without the run-time
// checks of checked mode, which could only check the rewrite against
// itself (DESIGN.md, "Defense in depth"). The mode is unused by the ISA;
// only the engines accept it (ValidateXlated).
const ModeTrusted uint8 = 0xe0

// IsTrusted reports whether ins is a ModeTrusted load or store.
func (ins Instruction) IsTrusted() bool {
	c := ins.Class()
	return (c == ClassLDX || c == ClassST) && ins.Op&0xe0 == ModeTrusted
}
