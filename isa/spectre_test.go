package isa

import "testing"

// kernelMasked runs the kernel's masking sequence for pointer arithmetic
// (do_misc_fixups) instruction by instruction on a register file with the
// hidden AX: the reference MaskedALU must equal.
func kernelMasked(ins Instruction, regs [11]uint64) [11]uint64 {
	issrc := ins.Off&MaskOffDst == 0
	isneg := ins.Off&MaskNeg != 0
	isimm := ins.Off&MaskImm != 0
	offReg := ins.Src
	if !issrc {
		offReg = ins.Dst
	}
	var ax uint64
	if isimm {
		ax = uint64(uint32(ins.Imm))
	} else {
		if isneg {
			regs[offReg] *= ^uint64(0) // *= -1
		}
		ax = uint64(uint32(ins.Imm))
		ax -= regs[offReg]
		ax |= regs[offReg]
		ax = -ax
		ax = uint64(int64(ax) >> 63)
		ax &= regs[offReg]
	}
	if !issrc {
		regs[ins.Dst] = regs[ins.Src]
	}
	sub := ins.Off&MaskSub != 0
	if isneg {
		sub = !sub
	}
	if sub {
		regs[ins.Dst] -= ax
	} else {
		regs[ins.Dst] += ax
	}
	if issrc && isneg && !isimm {
		regs[offReg] *= ^uint64(0)
	}
	return regs
}

// TestMaskedALU checks OpMaskedALU's semantics against the kernel's
// sequence, and that offsets within the limit pass unchanged while those
// outside become zero.
func TestMaskedALU(t *testing.T) {
	vals := []uint64{0, 1, 7, 8, 31, 32, 47, 48, 511, 512, 1 << 31, 1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, ^uint64(0), ^uint64(7), ^uint64(46)}
	limits := []int32{0, 1, 7, 31, 47, 511, 0x7fffffff, -1}
	for flags := int16(0); flags < 16; flags++ {
		for _, limit := range limits {
			for _, d := range vals {
				for _, s := range vals {
					ins := Instruction{Op: OpMaskedALU, Dst: R1, Src: R2, Off: flags, Imm: limit}
					var regs [11]uint64
					regs[R1], regs[R2] = d, s
					want := kernelMasked(ins, regs)
					if got := MaskedALU(ins, d, s); got != want[R1] || want[R2] != s {
						t.Fatalf("%+v with r1=%#x r2=%#x: %#x, the kernel's sequence %#x (r2 %#x)", ins, d, s, got, want[R1], want[R2])
					}
				}
			}
		}
	}
	for _, c := range []struct {
		off   uint64
		limit uint32
		want  uint64
	}{{0, 0, 0}, {5, 7, 5}, {7, 7, 7}, {8, 7, 0}, {^uint64(0), 7, 0}, {1 << 63, 7, 0}, {31, 31, 31}, {32, 31, 0}, {1<<32 + 1, 0xffffffff, 0}} {
		if got := MaskedOffset(c.off, c.limit); got != c.want {
			t.Errorf("MaskedOffset(%#x, %d) = %#x, want %#x", c.off, c.limit, got, c.want)
		}
	}
}
