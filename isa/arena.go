package isa

// AddrSpaceCast is the offset that makes an ALU64 MOV X an address space
// cast (the kernel's BPF_ADDR_SPACE_CAST): imm 1 casts an arena pointer
// of address space 1 (the user address programs and user space share) to
// address space 0 (the kernel's view: the arena offset in its low 32
// bits), imm 1<<16 casts back.
const AddrSpaceCast int16 = 1

// Address space casts, by their immediates.
const (
	CastToKernel int32 = 1       // as(1) to as(0)
	CastToUser   int32 = 1 << 16 // as(0) to as(1)
)

// IsAddrSpaceCast reports whether ins is an address space cast.
func (ins Instruction) IsAddrSpaceCast() bool {
	return ins.Op == ClassALU64|ALUMov|SrcX && ins.Off == AddrSpaceCast
}

// ModeArena is the mode of the loads (LDX) and stores (ST, STX) the
// rewrite puts in place of accesses through arena pointers: the kernel's
// BPF_PROBE_MEM32, with its encoding. The address is the arena's base
// (vm.Env.Arena) plus the register's low 32 bits plus the offset, which
// always lands in the arena's window; a page the arena does not hold
// reads 0 and drops writes (vm.ArenaMapped). ModeArenaSX is the
// sign-extending loads' (LDX; the LDX-only mode ATOMIC's encoding), and
// ModeArenaAtomic the atomic operations' (STX, the immediate the
// operation; the STX-only encoding 0xe0, the kernel's BPF_PROBE_ATOMIC):
// on a page the arena does not hold they change no register. Only the
// engines accept them (ValidateXlated).
const (
	ModeArena       uint8 = 0xa0
	ModeArenaSX     uint8 = ModeATOMIC
	ModeArenaAtomic uint8 = 0xe0
)

// IsArena reports whether ins is an arena access: a ModeArena load or
// store, a ModeArenaSX load or a ModeArenaAtomic operation.
func (ins Instruction) IsArena() bool {
	c, m := ins.Class(), ins.Op&0xe0
	switch {
	case (c == ClassLDX || c == ClassST || c == ClassSTX) && m == ModeArena:
		return true
	case c == ClassLDX && m == ModeArenaSX:
		return ins.Op&0x18 != SizeDW
	}
	return c == ClassSTX && m == ModeArenaAtomic
}
