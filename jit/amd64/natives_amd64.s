//go:build amd64 && linux

#include "textflag.h"

// Native routines: helpers that JIT code CALLs directly, without leaving
// native code (natives.go). They run on the native stack with r12 holding
// the execution context header; they return the helper's result in rbx
// (BPF R0), may clobber rax and rdx, and preserve every other register, so
// R1-R5 keep their values as with helpers served by Go. They never touch
// the goroutine, its stack or the GC.
//
// Header offsets (checked by TestHeaderLayout): cpu 352, rand 360.

// bpf_get_smp_processor_id: the runner's number.
TEXT ·nativeCPU(SB), NOSPLIT|NOFRAME, $0-0
	MOVQ 352(R12), BX
	RET

// bpf_get_numa_node_id: bpfvm has one node.
TEXT ·nativeZero(SB), NOSPLIT|NOFRAME, $0-0
	XORL BX, BX
	RET

// bpf_get_prandom_u32: one step of the run's PCG-DXSM generator (vm.Rand:
// Hi at 0, Lo at 8), the high 32 bits of the output.
TEXT ·nativeRandom(SB), NOSPLIT|NOFRAME, $0-0
	PUSHQ CX
	PUSHQ SI
	MOVQ  360(R12), SI
	// state = state * mul + inc (128-bit)
	MOVQ  8(SI), AX
	MOVQ  $4865540595714422341, CX // mulLo
	MULQ  CX                       // dx:ax = lo * mulLo
	MOVQ  0(SI), BX
	IMULQ CX, BX                   // hi * mulLo
	ADDQ  BX, DX
	MOVQ  8(SI), BX
	MOVQ  $2549297995355413924, CX // mulHi
	IMULQ CX, BX                   // lo * mulHi
	ADDQ  BX, DX
	MOVQ  $1442695040888963407, CX // incLo
	ADDQ  CX, AX
	MOVQ  $6364136223846793005, CX // incHi
	ADCQ  CX, DX
	MOVQ  AX, 8(SI)
	MOVQ  DX, 0(SI)
	// DXSM output
	MOVQ  DX, BX
	SHRQ  $32, BX
	XORQ  DX, BX
	MOVQ  $0xda942042e4dd58b5, CX
	IMULQ CX, BX
	MOVQ  BX, DX
	SHRQ  $48, DX
	XORQ  DX, BX
	ORQ   $1, AX
	IMULQ AX, BX
	SHRQ  $32, BX
	POPQ  SI
	POPQ  CX
	RET

// func nativeAddrs() (cpu, zero, random uintptr)
TEXT ·nativeAddrs(SB), NOSPLIT, $0-24
	MOVQ $·nativeCPU(SB), AX
	MOVQ AX, cpu+0(FP)
	MOVQ $·nativeZero(SB), AX
	MOVQ AX, zero+8(FP)
	MOVQ $·nativeRandom(SB), AX
	MOVQ AX, random+16(FP)
	RET
