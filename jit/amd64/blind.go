//go:build amd64 && linux

package amd64

import "math/rand/v2"

// Constant blinding (Options.Blind). A program that chooses its immediates
// chooses bytes of executable memory; with blinding, every 32- and 64-bit
// immediate the program wrote is emitted as imm^k with a fresh random k and
// undone with an XOR at run time in a scratch register (rax or rdx, or the
// destination itself for moves), so the image holds only imm^k and k. As in
// the kernel's bpf_jit_blind_constants, shift counts (6 bits) and memory
// offsets (16 bits) stay as they are. Blinded forms always use 32-bit
// immediate encodings, so code size does not depend on the random values
// and the layout passes converge as without blinding.

// key returns a random non-zero key different from imm, so that neither
// imm^key nor key equals imm.
func key(imm int32) int32 {
	for {
		k := int32(rand.Uint32())
		if k != 0 && k != imm {
			return k
		}
	}
}

// blindImm loads the sign extension of imm into reg: mov reg, imm^k; xor
// reg, k (both sign-extend their 32-bit immediates, and so does the XOR of
// the two).
func (c *compiler) blindImm(reg int, imm int32) {
	a := c.a
	k := key(imm)
	a.rex(true, -1, -1, reg, false)
	a.emit(0xc7)
	a.modrmReg(0, reg)
	a.imm32(imm ^ k)
	a.aluRI32(8, aluXor, reg, k)
}

// blindImm32 loads the 32-bit imm into reg, zero-extended.
func (c *compiler) blindImm32(reg int, imm uint32) {
	k := key(int32(imm))
	c.a.movRI32(reg, imm^uint32(k))
	c.a.aluRI32(4, aluXor, reg, k)
}

// blindImm64 loads a 64-bit constant into dst (not rax): movabs dst, v^k;
// movabs rax, k; xor dst, rax, with neither half of k zero or equal to the
// same half of v.
func (c *compiler) blindImm64(dst int, v uint64) {
	a := c.a
	lo, hi := uint64(uint32(key(int32(v)))), uint64(uint32(key(int32(v>>32))))
	k := hi<<32 | lo
	a.movabs(dst, v^k)
	a.movabs(rax, k)
	a.aluRR(8, aluXor, dst, rax)
}

// aluRI32 is aluRI with a 32-bit immediate whatever its value.
func (a *asm) aluRI32(size int, op int, dst int, imm int32) {
	a.prefix(size, -1, dst, 0)
	a.emit(0x81)
	a.modrmReg(op, dst)
	a.imm32(imm)
}
