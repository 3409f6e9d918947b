package interp

import (
	"fmt"

	"github.com/bpfvm/bpfvm/isa"
)

// insn is the pre-decoded form of one instruction slot: a dense internal
// opcode that folds in the fields the kernel encodes elsewhere (offset for
// sdiv/smod/movsx, immediate for byte swaps and atomics), so that dispatch is
// a single jump table with no inner switches.
type insn struct {
	op  uint8
	dst uint8
	src uint8
	_   uint8
	off int32 // memory offset, or jump offset relative to the next slot
	imm int64 // sign-extended immediate, or the whole LD_IMM64 constant
}

// Internal opcodes. Suffix K takes the immediate, X the source register;
// 32 marks the 32-bit (ALU / JMP32) forms.
const (
	opInvalid uint8 = iota

	opAdd64K
	opAdd64X
	opSub64K
	opSub64X
	opMul64K
	opMul64X
	opDiv64K
	opDiv64X
	opSdiv64K
	opSdiv64X
	opMod64K
	opMod64X
	opSmod64K
	opSmod64X
	opOr64K
	opOr64X
	opAnd64K
	opAnd64X
	opLsh64K
	opLsh64X
	opRsh64K
	opRsh64X
	opArsh64K
	opArsh64X
	opXor64K
	opXor64X
	opMov64K
	opMov64X
	opMovsx8_64
	opMovsx16_64
	opMovsx32_64
	opNeg64

	opAdd32K
	opAdd32X
	opSub32K
	opSub32X
	opMul32K
	opMul32X
	opDiv32K
	opDiv32X
	opSdiv32K
	opSdiv32X
	opMod32K
	opMod32X
	opSmod32K
	opSmod32X
	opOr32K
	opOr32X
	opAnd32K
	opAnd32X
	opLsh32K
	opLsh32X
	opRsh32K
	opRsh32X
	opArsh32K
	opArsh32X
	opXor32K
	opXor32X
	opMov32K
	opMov32X
	opMovsx8_32
	opMovsx16_32
	opNeg32

	opLe16
	opLe32
	opLe64 // no-op on little-endian hosts, kept for clarity
	opSwap16
	opSwap32
	opSwap64

	opLdImm64
	opLdAbsB
	opLdAbsH
	opLdAbsW
	opLdIndB
	opLdIndH
	opLdIndW

	opLdxB
	opLdxH
	opLdxW
	opLdxDW
	opLdxSB
	opLdxSH
	opLdxSW
	opStB
	opStH
	opStW
	opStDW
	opStxB
	opStxH
	opStxW
	opStxDW

	opAtomicAdd32
	opAtomicOr32
	opAtomicAnd32
	opAtomicXor32
	opAtomicFetchAdd32
	opAtomicFetchOr32
	opAtomicFetchAnd32
	opAtomicFetchXor32
	opAtomicXchg32
	opAtomicCmpXchg32
	opAtomicAdd64
	opAtomicOr64
	opAtomicAnd64
	opAtomicXor64
	opAtomicFetchAdd64
	opAtomicFetchOr64
	opAtomicFetchAnd64
	opAtomicFetchXor64
	opAtomicXchg64
	opAtomicCmpXchg64
	opLoadAcqB
	opLoadAcqH
	opLoadAcqW
	opLoadAcqDW
	opStoreRelB
	opStoreRelH
	opStoreRelW
	opStoreRelDW

	opJA
	opJeqK
	opJeqX
	opJgtK
	opJgtX
	opJgeK
	opJgeX
	opJsetK
	opJsetX
	opJneK
	opJneX
	opJsgtK
	opJsgtX
	opJsgeK
	opJsgeX
	opJltK
	opJltX
	opJleK
	opJleX
	opJsltK
	opJsltX
	opJsleK
	opJsleX
	opJeq32K
	opJeq32X
	opJgt32K
	opJgt32X
	opJge32K
	opJge32X
	opJset32K
	opJset32X
	opJne32K
	opJne32X
	opJsgt32K
	opJsgt32X
	opJsge32K
	opJsge32X
	opJlt32K
	opJlt32X
	opJle32K
	opJle32X
	opJslt32K
	opJslt32X
	opJsle32K
	opJsle32X

	opCall
	opCallLocal
	opCallX
	opExit
	opMayGoto
	opMayGotoTimed
	opIterNumNext
	opLdxTB // isa.ModeTrusted loads and stores: never checked
	opLdxTH
	opLdxTW
	opLdxTDW
	opStTB
	opStTH
	opStTW
	opStTDW
	opLdxPB // isa.ModeProbe loads: 0 where the run may not read
	opLdxPH
	opLdxPW
	opLdxPDW
	opLdxPSB // isa.ModeProbeSX loads
	opLdxPSH
	opLdxPSW
	opLdxAB // isa.ModeArena loads and stores: the arena's base plus the low 32 bits
	opLdxAH
	opLdxAW
	opLdxADW
	opStxAB
	opStxAH
	opStxAW
	opStxADW
	opStAB
	opStAH
	opStAW
	opStADW
	opLdxASB // isa.ModeArenaSX loads
	opLdxASH
	opLdxASW
	opAtomicA32 // isa.ModeArenaAtomic: imm is the operation's op (opAtomicAdd32 ...)
	opAtomicA64
	opCastUser // address space cast to the user's: env.ArenaUser | the low 32 bits, or 0
	opNop      // second slot of LD_IMM64; never executed
	opCPUIndex // internal isa.OpCPUIndex: dst = env.CPU
	opDead     // internal isa.OpDead: stop with vm.ErrDeadCode
	opNospec   // internal isa.OpNospec: a speculation barrier, nothing to do here
	opMasked   // internal isa.OpMaskedALU: pointer arithmetic with a masked offset

	numOps
)

// aluOps maps (ALU operation >> 4) to the internal 64-bit K opcode; X is +1.
var aluOps = [16]uint8{
	isa.ALUAdd >> 4: opAdd64K, isa.ALUSub >> 4: opSub64K, isa.ALUMul >> 4: opMul64K,
	isa.ALUDiv >> 4: opDiv64K, isa.ALUOr >> 4: opOr64K, isa.ALUAnd >> 4: opAnd64K,
	isa.ALULsh >> 4: opLsh64K, isa.ALURsh >> 4: opRsh64K, isa.ALUMod >> 4: opMod64K,
	isa.ALUXor >> 4: opXor64K, isa.ALUMov >> 4: opMov64K, isa.ALUArsh >> 4: opArsh64K,
}

// jmpOps maps (jump operation >> 4) to the internal 64-bit K opcode; X is +1.
var jmpOps = [16]uint8{
	isa.JumpEQ >> 4: opJeqK, isa.JumpGT >> 4: opJgtK, isa.JumpGE >> 4: opJgeK,
	isa.JumpSet >> 4: opJsetK, isa.JumpNE >> 4: opJneK, isa.JumpSGT >> 4: opJsgtK,
	isa.JumpSGE >> 4: opJsgeK, isa.JumpLT >> 4: opJltK, isa.JumpLE >> 4: opJleK,
	isa.JumpSLT >> 4: opJsltK, isa.JumpSLE >> 4: opJsleK,
}

// The distance between the 64-bit and 32-bit forms of ALU and jump opcodes.
const (
	alu32Delta = opAdd32K - opAdd64K
	jmp32Delta = opJeq32K - opJeqK
)

var atomicOps = map[int32]uint8{
	isa.AtomicAdd: opAtomicAdd32, isa.AtomicOr: opAtomicOr32, isa.AtomicAnd: opAtomicAnd32, isa.AtomicXor: opAtomicXor32,
	isa.AtomicAdd | isa.AtomicFetch: opAtomicFetchAdd32, isa.AtomicOr | isa.AtomicFetch: opAtomicFetchOr32,
	isa.AtomicAnd | isa.AtomicFetch: opAtomicFetchAnd32, isa.AtomicXor | isa.AtomicFetch: opAtomicFetchXor32,
	isa.AtomicXchg: opAtomicXchg32, isa.AtomicCmpXchg: opAtomicCmpXchg32,
}

const atomic64Delta = opAtomicAdd64 - opAtomicAdd32

// decode converts a validated program to the pre-decoded form.
func decode(prog []isa.Instruction) ([]insn, error) {
	code := make([]insn, len(prog))
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		in := insn{dst: uint8(ins.Dst), src: uint8(ins.Src), off: int32(ins.Off), imm: int64(ins.Imm)}
		in.op = decodeOp(ins)
		if in.op == opInvalid {
			return nil, fmt.Errorf("insn %d: %w: unsupported opcode %#02x", pc, isa.ErrInvalidProgram, ins.Op)
		}
		switch in.op {
		case opLdImm64:
			in.imm = int64(isa.Imm64(ins, prog[pc+1]))
			code[pc] = in
			pc++
			code[pc] = insn{op: opNop}
			continue
		case opJA:
			if ins.Class() == isa.ClassJMP32 {
				in.off = ins.Imm
			}
		case opCallLocal:
			in.off = ins.Imm
		case opAtomicA32, opAtomicA64:
			// The operation as a plain atomic of the size decodes.
			plain := ins
			plain.Op = plain.Op&^0xe0 | isa.ModeATOMIC
			in.imm = int64(decodeOp(plain))
		case opMayGotoTimed:
			in.imm = int64(mayGotoBudget(ins))
		}
		code[pc] = in
	}
	return code, nil
}

func decodeOp(ins isa.Instruction) uint8 {
	if ins.Op == isa.OpCPUIndex {
		return opCPUIndex
	}
	if ins.Op == isa.OpDead {
		return opDead
	}
	if ins.Op == isa.OpNospec {
		return opNospec
	}
	if ins.Op == isa.OpMaskedALU {
		return opMasked
	}
	if ins.IsIterNumNext() {
		return opIterNumNext
	}
	if ins.IsProbe() {
		if ins.Op&0xe0 == isa.ModeProbeSX {
			return opLdxPSB + sizeIndex(ins.Op)
		}
		return opLdxPB + sizeIndex(ins.Op)
	}
	if ins.IsArena() {
		switch c, m := ins.Class(), ins.Op&0xe0; {
		case c == isa.ClassLDX && m == isa.ModeArenaSX:
			return opLdxASB + sizeIndex(ins.Op)
		case c == isa.ClassLDX:
			return opLdxAB + sizeIndex(ins.Op)
		case m == isa.ModeArenaAtomic:
			if _, ok := atomicOps[ins.Imm]; !ok {
				return opInvalid
			}
			if ins.Op&0x18 == isa.SizeDW {
				return opAtomicA64
			}
			return opAtomicA32
		case c == isa.ClassSTX:
			return opStxAB + sizeIndex(ins.Op)
		}
		return opStAB + sizeIndex(ins.Op)
	}
	if ins.IsAddrSpaceCast() {
		// The rewrite makes casts to the kernel's space 32-bit moves;
		// an unverified program's keep the low 32 bits too.
		if ins.Imm == isa.CastToUser {
			return opCastUser
		}
		return opMov32X
	}
	if ins.IsTrusted() {
		if ins.Class() == isa.ClassLDX {
			return opLdxTB + sizeIndex(ins.Op)
		}
		return opStTB + sizeIndex(ins.Op)
	}
	class := ins.Class()
	x := ins.Op&isa.SrcX != 0
	op := ins.Op & 0xf0
	var xd uint8
	if x {
		xd = 1
	}
	switch class {
	case isa.ClassALU, isa.ClassALU64:
		var d uint8
		if class == isa.ClassALU {
			d = alu32Delta
		}
		switch op {
		case isa.ALUNeg:
			if class == isa.ClassALU {
				return opNeg32
			}
			return opNeg64
		case isa.ALUEnd:
			// On a little-endian host, to-LE truncates and to-BE or the
			// ALU64 bswap swaps.
			base := opSwap16
			if class == isa.ClassALU && !x {
				base = opLe16
			}
			switch ins.Imm {
			case 16:
				return base
			case 32:
				return base + 1
			case 64:
				return base + 2
			}
			return opInvalid
		case isa.ALUDiv, isa.ALUMod:
			base := aluOps[op>>4]
			if ins.Off == 1 {
				base += 2 // sdiv/smod follow div/mod
			}
			return base + d + xd
		case isa.ALUMov:
			if x && ins.Off != 0 {
				switch {
				case class == isa.ClassALU && ins.Off == 8:
					return opMovsx8_32
				case class == isa.ClassALU && ins.Off == 16:
					return opMovsx16_32
				case class == isa.ClassALU64 && ins.Off == 8:
					return opMovsx8_64
				case class == isa.ClassALU64 && ins.Off == 16:
					return opMovsx16_64
				case class == isa.ClassALU64 && ins.Off == 32:
					return opMovsx32_64
				}
				return opInvalid
			}
		}
		if base := aluOps[op>>4]; base != 0 {
			return base + d + xd
		}
	case isa.ClassJMP, isa.ClassJMP32:
		switch op {
		case isa.JumpA:
			return opJA
		case isa.JumpCall:
			switch {
			case x:
				return opCallX
			case ins.Src == isa.Register(isa.CallLocal):
				return opCallLocal
			case ins.Src == isa.Register(isa.CallHelper):
				return opCall
			}
			return opInvalid // kfunc calls must be resolved before execution
		case isa.JumpExit:
			return opExit
		case isa.JumpCond:
			if x {
				return opMayGotoTimed
			}
			return opMayGoto
		}
		if base := jmpOps[op>>4]; base != 0 {
			if class == isa.ClassJMP32 {
				base += jmp32Delta
			}
			return base + xd
		}
	case isa.ClassLD:
		idx := sizeIndex(ins.Op)
		if idx > 2 && ins.Op&0xe0 != isa.ModeIMM {
			return opInvalid
		}
		switch ins.Op & 0xe0 {
		case isa.ModeIMM:
			return opLdImm64
		case isa.ModeABS:
			return opLdAbsB + idx
		case isa.ModeIND:
			return opLdIndB + idx
		}
	case isa.ClassLDX:
		s := sizeIndex(ins.Op)
		if ins.Op&0xe0 == isa.ModeMEMSX {
			if s > 2 {
				return opInvalid
			}
			return opLdxSB + s
		}
		return opLdxB + s
	case isa.ClassST:
		return opStB + sizeIndex(ins.Op)
	case isa.ClassSTX:
		s := sizeIndex(ins.Op)
		if ins.Op&0xe0 == isa.ModeMEM {
			return opStxB + s
		}
		switch ins.Imm {
		case isa.AtomicLoadAcquire:
			return opLoadAcqB + s
		case isa.AtomicStoreRelease:
			return opStoreRelB + s
		}
		base, ok := atomicOps[ins.Imm]
		if !ok {
			return opInvalid
		}
		if ins.Op&0x18 == isa.SizeDW {
			base += atomic64Delta
		}
		return base
	}
	return opInvalid
}

// sizeIndex orders access sizes B, H, W, DW as 0..3.
func sizeIndex(op uint8) uint8 {
	switch op & 0x18 {
	case isa.SizeB:
		return 0
	case isa.SizeH:
		return 1
	case isa.SizeW:
		return 2
	}
	return 3
}
