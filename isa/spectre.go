package isa

// Internal instructions of the Spectre mitigations for unprivileged
// programs (rewrite.Spectre). Like OpCPUIndex they are never valid in a
// loaded program; the engines accept them through ValidateXlated.

// OpNospec is a speculation barrier, the kernel's BPF_ST | BPF_NOSPEC:
// architecturally it does nothing; the JIT emits lfence, which the CPU
// does not run past speculatively. All its other fields are zero.
const OpNospec uint8 = ClassST | 0xc0 // 0xc2

// OpMaskedALU is pointer arithmetic with its offset masked to the range
// the verifier proved, the kernel's sanitize_ptr_alu rewrite in one
// instruction: the offset register (Src, or Dst with MaskOffDst) is
// negated if MaskNeg, then limited to Imm (taken as a uint32) by the
// kernel's branch-free mask, which makes an offset outside [0, Imm] zero
// (or, with MaskImm, replaced by Imm itself); the pointer (Dst, or Src
// with MaskOffDst) plus that, or minus it (MaskSub, flipped by MaskNeg),
// goes to Dst. The offset register itself is left as it was.
const OpMaskedALU uint8 = ClassALU64 | 0xe0 | SrcX // 0xef

// OpMaskedALU flags, in Off.
const (
	// MaskSub: the instruction subtracted the offset.
	MaskSub int16 = 1 << iota
	// MaskNeg: the offset is negative; its negation is masked and the
	// operation flipped.
	MaskNeg
	// MaskOffDst: the offset is the destination register, the pointer
	// the source (scalar += pointer).
	MaskOffDst
	// MaskImm: the offset is a known constant, replaced by the limit.
	MaskImm
)

// MaskedOffset is the offset OpMaskedALU adds or subtracts: off (already
// negated for MaskNeg) if it lies in [0, limit], else 0, computed as the
// kernel's masking sequence does, without a branch.
func MaskedOffset(off uint64, limit uint32) uint64 {
	ax := uint64(limit) - off
	ax |= off
	ax = -ax
	return uint64(int64(ax)>>63) & off
}

// MaskedALU is what OpMaskedALU computes from the destination and source
// registers: the new destination.
func MaskedALU(ins Instruction, dst, src uint64) uint64 {
	ptr, off := dst, src
	if ins.Off&MaskOffDst != 0 {
		ptr, off = src, dst
	}
	sub := ins.Off&MaskSub != 0
	if ins.Off&MaskNeg != 0 {
		off = -off
		sub = !sub
	}
	ax := uint64(uint32(ins.Imm))
	if ins.Off&MaskImm == 0 {
		ax = MaskedOffset(off, uint32(ins.Imm))
	}
	if sub {
		return ptr - ax
	}
	return ptr + ax
}
