//go:build amd64 && linux

package amd64

import "github.com/bpfvm/bpfvm/isa"

// The Spectre mitigations' internal instructions (rewrite.Spectre):
// isa.OpNospec is lfence, which the CPU does not execute past before
// everything before it completed; isa.OpMaskedALU is the kernel's masking
// sequence with rax holding the offset and rdx the kernel's BPF_REG_AX.

// lfence emits a speculation barrier.
func (a *asm) lfence() { a.emit(0x0f, 0xae, 0xe8) }

// maskedALU emits isa.OpMaskedALU: dst = ptr +/- mask(off, limit).
func (c *compiler) maskedALU(ins isa.Instruction) {
	a := c.a
	ptr, off := regMap[ins.Dst], regMap[ins.Src]
	if ins.Off&isa.MaskOffDst != 0 {
		ptr, off = off, ptr
	}
	sub := ins.Off&isa.MaskSub != 0
	if ins.Off&isa.MaskImm != 0 {
		a.movRI32(rdx, uint32(ins.Imm))
	} else {
		a.movRR(8, rax, off)
		if ins.Off&isa.MaskNeg != 0 {
			a.unary(8, 3, rax) // neg
		}
		a.movRI32(rdx, uint32(ins.Imm))
		a.aluRR(8, aluSub, rdx, rax)
		a.aluRR(8, aluOr, rdx, rax)
		a.unary(8, 3, rdx) // neg
		a.shiftRI(8, shSar, rdx, 63)
		a.aluRR(8, aluAnd, rdx, rax)
	}
	if ins.Off&isa.MaskNeg != 0 {
		sub = !sub
	}
	dst := regMap[ins.Dst]
	if ptr != dst {
		a.movRR(8, dst, ptr)
	}
	o := aluAdd
	if sub {
		o = aluSub
	}
	a.aluRR(8, o, dst, rdx)
}
