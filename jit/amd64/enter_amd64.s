//go:build amd64 && linux

#include "textflag.h"

// func enter(ctx uintptr)
//
// enter runs native code until it exits to Go. ctx is the address of a
// header (see ctx.go): enter saves Go's SP and BP there, loads the pinned
// BPF registers (R0-R10 in BX DI SI CX R8 R9 R13 R14 R15 R10 BP, the budget
// chunk in R11), switches to the native stack saved in the header and jumps
// to header.resume. Native code returns by restoring Go's SP and BP from
// the header and executing RET, which returns from enter.
//
// Offsets: goSP 0, goBP 8, nativeSP 16, resume 24, regs 176.
TEXT ·enter(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ ctx+0(FP), R12
	MOVQ SP, 0(R12)
	MOVQ BP, 8(R12)
	MOVQ 24(R12), AX
	MOVQ 176(R12), BX
	MOVQ 184(R12), DI
	MOVQ 192(R12), SI
	MOVQ 200(R12), CX
	MOVQ 208(R12), R8
	MOVQ 216(R12), R9
	MOVQ 224(R12), R13
	MOVQ 232(R12), R14
	MOVQ 240(R12), R15
	MOVQ 248(R12), R10
	MOVQ 256(R12), BP
	MOVQ 264(R12), R11
	MOVQ 16(R12), SP
	JMP  AX
