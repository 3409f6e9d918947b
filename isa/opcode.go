package isa

// Instruction classes (the low three bits of the opcode).
const (
	ClassLD    uint8 = 0x00
	ClassLDX   uint8 = 0x01
	ClassST    uint8 = 0x02
	ClassSTX   uint8 = 0x03
	ClassALU   uint8 = 0x04
	ClassJMP   uint8 = 0x05
	ClassJMP32 uint8 = 0x06
	ClassALU64 uint8 = 0x07
)

// Operand source for ALU and JMP classes (bit 3).
const (
	SrcK uint8 = 0x00 // 32-bit immediate
	SrcX uint8 = 0x08 // source register
)

// Access sizes for load and store classes (bits 3-4).
const (
	SizeW  uint8 = 0x00
	SizeH  uint8 = 0x08
	SizeB  uint8 = 0x10
	SizeDW uint8 = 0x18
)

// Modes for load and store classes (bits 5-7).
const (
	ModeIMM    uint8 = 0x00
	ModeABS    uint8 = 0x20
	ModeIND    uint8 = 0x40
	ModeMEM    uint8 = 0x60
	ModeMEMSX  uint8 = 0x80
	ModeATOMIC uint8 = 0xc0
)

// ALU operations (bits 4-7 of ALU and ALU64 opcodes).
const (
	ALUAdd  uint8 = 0x00
	ALUSub  uint8 = 0x10
	ALUMul  uint8 = 0x20
	ALUDiv  uint8 = 0x30
	ALUOr   uint8 = 0x40
	ALUAnd  uint8 = 0x50
	ALULsh  uint8 = 0x60
	ALURsh  uint8 = 0x70
	ALUNeg  uint8 = 0x80
	ALUMod  uint8 = 0x90
	ALUXor  uint8 = 0xa0
	ALUMov  uint8 = 0xb0
	ALUArsh uint8 = 0xc0
	ALUEnd  uint8 = 0xd0
)

// Byte-order conversions: the source bit of an END opcode in the ALU class.
// In the ALU64 class END with SrcK is an unconditional byte swap.
const (
	EndToLE uint8 = 0x00
	EndToBE uint8 = 0x08
)

// Jump operations (bits 4-7 of JMP and JMP32 opcodes).
const (
	JumpA    uint8 = 0x00
	JumpEQ   uint8 = 0x10
	JumpGT   uint8 = 0x20
	JumpGE   uint8 = 0x30
	JumpSet  uint8 = 0x40
	JumpNE   uint8 = 0x50
	JumpSGT  uint8 = 0x60
	JumpSGE  uint8 = 0x70
	JumpCall uint8 = 0x80
	JumpExit uint8 = 0x90
	JumpLT   uint8 = 0xa0
	JumpLE   uint8 = 0xb0
	JumpSLT  uint8 = 0xc0
	JumpSLE  uint8 = 0xd0
	JumpCond uint8 = 0xe0 // may_goto
)

// Atomic operations, carried in the immediate of STX|ATOMIC instructions.
const (
	AtomicAdd          int32 = 0x00
	AtomicOr           int32 = 0x40
	AtomicAnd          int32 = 0x50
	AtomicXor          int32 = 0xa0
	AtomicFetch        int32 = 0x01
	AtomicXchg         int32 = 0xe0 | AtomicFetch
	AtomicCmpXchg      int32 = 0xf0 | AtomicFetch
	AtomicLoadAcquire  int32 = 0x100
	AtomicStoreRelease int32 = 0x110
)

// Source register values of LD_IMM64 that make the constant a pseudo value.
const (
	PseudoMapFD       uint8 = 1 // imm: map fd (index); value: map pointer
	PseudoMapValue    uint8 = 2 // imm: map fd, next imm: offset; value: address in map value
	PseudoBTFID       uint8 = 3 // imm: BTF id of a kernel variable
	PseudoFunc        uint8 = 4 // imm: relative instruction offset of a subprogram
	PseudoMapIdx      uint8 = 5 // like PseudoMapFD but imm is an index into fd_array
	PseudoMapIdxValue uint8 = 6 // like PseudoMapValue but imm is an index into fd_array

	// PseudoMapField is internal, never valid in a loaded program
	// (Validate rejects it): imm: map index, next imm: offset of a header
	// field after maps.HeaderFields, off: its size (4 or 8); value: the
	// field, zero-extended. The rewrite folds the header loads of inlined
	// lookups into it where the map is known at load time.
	PseudoMapField uint8 = 0x0f
)

// Source register values of CALL instructions.
const (
	CallHelper uint8 = 0 // imm: helper id
	CallLocal  uint8 = 1 // imm: relative instruction offset of a subprogram (bpf-to-bpf)
	CallKfunc  uint8 = 2 // imm: BTF id of a kernel function
)

// Frequently used full opcodes.
const (
	OpLdImm64 uint8 = ClassLD | ModeIMM | SizeDW // 0x18
	OpCall    uint8 = ClassJMP | JumpCall        // 0x85
	OpCallX   uint8 = ClassJMP | JumpCall | SrcX // 0x8d
	OpExit    uint8 = ClassJMP | JumpExit        // 0x95
	OpJA      uint8 = ClassJMP | JumpA           // 0x05
	OpJA32    uint8 = ClassJMP32 | JumpA         // 0x06, gotol: 32-bit offset in imm
	OpMayGoto uint8 = ClassJMP | JumpCond        // 0xe5

	// OpCPUIndex is internal, never valid in a loaded program (Validate
	// rejects it; the engines accept it through ValidateXlated): dst = the
	// index of the CPU (runner) the program runs on. Rewrites emit it to
	// inline bpf_get_smp_processor_id and per-CPU map lookups, where the
	// kernel emits BPF_MOV64_PERCPU_REG. Its ALU operation code 0xe0 is
	// unused by the ISA, so an engine that does not know it fails to load
	// rather than running something else.
	OpCPUIndex uint8 = ClassALU64 | 0xe0 // 0xe7

	// OpDead is internal like OpCPUIndex: it stops the run with
	// vm.ErrDeadCode. The rewrite puts it in place of every instruction the
	// verifier never reached (the kernel's sanitize_dead_code), so that
	// code whose safety nobody proved cannot run even if control got
	// there. All its fields are zero; it never falls through, so it may
	// end a program.
	OpDead uint8 = ClassALU | 0xe0 // 0xe4
)

// Class returns the instruction class of an opcode.
func Class(op uint8) uint8 { return op & 0x07 }

// IsALU reports whether the class is ALU or ALU64.
func IsALU(class uint8) bool { return class == ClassALU || class == ClassALU64 }

// IsJump reports whether the class is JMP or JMP32.
func IsJump(class uint8) bool { return class == ClassJMP || class == ClassJMP32 }

// SizeBytes returns the width in bytes of a load/store size code.
func SizeBytes(size uint8) int {
	switch size & 0x18 {
	case SizeB:
		return 1
	case SizeH:
		return 2
	case SizeW:
		return 4
	default:
		return 8
	}
}
