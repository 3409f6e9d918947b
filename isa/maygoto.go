package isa

// OpMayGotoTimed is the timed may_goto the rewrite puts in place of
// may_goto (the kernel's encoding has no source bit for it, so the kernel
// rejects it as an unknown opcode, and so does Validate): the jump is taken
// when the frame's hidden countdown (vm.MayGotoCount) is zero, and the
// countdown is refilled while less than Imm microseconds have passed since
// the frame's first may_goto. Only the engines accept it
// (ValidateXlated).
const OpMayGotoTimed uint8 = ClassJMP | JumpCond | SrcX // 0xed
