//go:build amd64 && linux

package amd64

import "encoding/binary"

// x86-64 general-purpose register numbers as the encoding uses them.
const (
	rax = iota
	rcx
	rdx
	rbx
	rsp
	rbp
	rsi
	rdi
	r8
	r9
	r10
	r11
	r12
	r13
	r14
	r15
)

// Condition codes (the low nibble of Jcc).
const (
	ccB  = 0x2 // unsigned <
	ccAE = 0x3 // unsigned >=
	ccE  = 0x4
	ccNE = 0x5
	ccBE = 0x6 // unsigned <=
	ccA  = 0x7 // unsigned >
	ccS  = 0x8
	ccL  = 0xc // signed <
	ccGE = 0xd
	ccLE = 0xe
	ccG  = 0xf
)

// Group-1 ALU operation numbers (the /digit of 0x81 and 0x83, and bits 3-5
// of the register forms).
const (
	aluAdd = 0
	aluOr  = 1
	aluAnd = 4
	aluSub = 5
	aluXor = 6
	aluCmp = 7
)

// Group-2 shift operation numbers (the /digit of 0xc1 and 0xd3).
const (
	shRol = 0
	shRor = 1
	shShl = 4
	shShr = 5
	shSar = 7
)

// mem is a memory operand [base + disp], or [rip + disp] when rip is set (the
// displacement then comes from a label, see ripLabel).
type mem struct {
	base int
	disp int32
}

// label is an index into the assembler's label tables.
type label int32

// asm accumulates machine code for one pass of the compiler. Jump sizes
// are decided from the label and jump positions of the previous pass; see
// compile.go for the convergence argument.
type asm struct {
	b []byte

	pos     []int32 // label positions in this pass (-1: not bound yet)
	prev    []int32 // label positions in the previous pass (nil on the first)
	jumps   []int32 // start of each jump of this pass, in emission order
	prevJmp []int32 // the same for the previous pass
	allLong bool    // emit every jump in its long form
}

func (a *asm) emit(bs ...byte) { a.b = append(a.b, bs...) }

func (a *asm) imm32(v int32) { a.b = binary.LittleEndian.AppendUint32(a.b, uint32(v)) }

func (a *asm) imm64(v uint64) { a.b = binary.LittleEndian.AppendUint64(a.b, v) }

func (a *asm) newLabel() label {
	a.pos = append(a.pos, -1)
	return label(len(a.pos) - 1)
}

func (a *asm) bind(l label) { a.pos[l] = int32(len(a.b)) }

// rex emits a REX prefix when one is needed. w selects 64-bit operands;
// reg, index and base are the register numbers encoded in ModRM.reg,
// SIB.index and ModRM.rm/SIB.base (or -1 when unused); force requests a REX
// even without extension bits (byte access to SPL, BPL, SIL, DIL).
func (a *asm) rex(w bool, reg, index, base int, force bool) {
	r := byte(0x40)
	if w {
		r |= 8
	}
	if reg >= 0 && reg&8 != 0 {
		r |= 4
	}
	if index >= 0 && index&8 != 0 {
		r |= 2
	}
	if base >= 0 && base&8 != 0 {
		r |= 1
	}
	if r != 0x40 || force {
		a.b = append(a.b, r)
	}
}

// prefix emits the operand-size prefix and REX for an operation of size
// bytes whose ModRM.reg is reg and ModRM.rm is rm. byteRegs says which of
// reg and rm are 8-bit registers (bit 0: reg, bit 1: rm).
func (a *asm) prefix(size int, reg, rm int, byteRegs int) {
	if size == 2 {
		a.b = append(a.b, 0x66)
	}
	force := false
	if byteRegs&1 != 0 && reg >= 4 && reg < 8 {
		force = true
	}
	if byteRegs&2 != 0 && rm >= 4 && rm < 8 {
		force = true
	}
	a.rex(size == 8, reg, -1, rm, force)
}

// modrmReg emits ModRM for a register-direct operand.
func (a *asm) modrmReg(reg, rm int) {
	a.b = append(a.b, 0xc0|byte(reg&7)<<3|byte(rm&7))
}

// modrmMem emits ModRM (and SIB, displacement) for [base + disp].
func (a *asm) modrmMem(reg int, m mem) {
	base := byte(m.base & 7)
	var mod byte
	switch {
	case m.disp == 0 && base != 5:
		mod = 0
	case m.disp >= -128 && m.disp <= 127:
		mod = 1
	default:
		mod = 2
	}
	a.b = append(a.b, mod<<6|byte(reg&7)<<3|base)
	if base == 4 {
		a.b = append(a.b, 0x24) // SIB: no index, base = rsp/r12
	}
	switch mod {
	case 1:
		a.b = append(a.b, byte(int8(m.disp)))
	case 2:
		a.imm32(m.disp)
	}
}

// rr emits "op reg, rm" with both operands registers.
func (a *asm) rr(size int, op []byte, reg, rm int) {
	byteRegs := 0
	if size == 1 {
		byteRegs = 3
	}
	a.prefix(size, reg, rm, byteRegs)
	a.b = append(a.b, op...)
	a.modrmReg(reg, rm)
}

// rm emits "op reg, [m]" (or "op [m], reg"; the opcode decides).
func (a *asm) rm(size int, op []byte, reg int, m mem) {
	byteRegs := 0
	if size == 1 {
		byteRegs = 1
	}
	if size == 2 {
		a.b = append(a.b, 0x66)
	}
	force := byteRegs != 0 && reg >= 4 && reg < 8
	a.rex(size == 8, reg, -1, m.base, force)
	a.b = append(a.b, op...)
	a.modrmMem(reg, m)
}

// movRR: dst = src (size 4 zero-extends, size 8 copies).
func (a *asm) movRR(size int, dst, src int) { a.rr(size, []byte{0x89}, src, dst) }

// aluRR: dst op= src.
func (a *asm) aluRR(size int, op int, dst, src int) {
	a.rr(size, []byte{byte(op<<3 | 1)}, src, dst)
}

// aluRI: dst op= imm (sign-extended for size 8).
func (a *asm) aluRI(size int, op int, dst int, imm int32) {
	a.prefix(size, -1, dst, 0)
	if imm >= -128 && imm <= 127 {
		a.emit(0x83)
		a.modrmReg(op, dst)
		a.emit(byte(int8(imm)))
		return
	}
	a.emit(0x81)
	a.modrmReg(op, dst)
	a.imm32(imm)
}

// aluRM: reg op= [m].
func (a *asm) aluRM(size int, op int, reg int, m mem) {
	a.rm(size, []byte{byte(op<<3 | 3)}, reg, m)
}

// aluMI: [m] op= imm (size 8: sign-extended imm32).
func (a *asm) aluMI(size int, op int, m mem, imm int32) {
	if size == 2 {
		a.b = append(a.b, 0x66)
	}
	a.rex(size == 8, -1, -1, m.base, false)
	if imm >= -128 && imm <= 127 {
		a.emit(0x83)
		a.modrmMem(op, m)
		a.emit(byte(int8(imm)))
		return
	}
	a.emit(0x81)
	a.modrmMem(op, m)
	a.imm32(imm)
}

// testRR: flags of dst & src.
func (a *asm) testRR(size int, dst, src int) { a.rr(size, []byte{0x85}, src, dst) }

// testRI: flags of dst & imm.
func (a *asm) testRI(size int, dst int, imm int32) {
	if dst == rax && size >= 4 {
		a.prefix(size, -1, -1, 0)
		a.emit(0xa9)
		a.imm32(imm)
		return
	}
	a.prefix(size, -1, dst, 0)
	a.emit(0xf7)
	a.modrmReg(0, dst)
	a.imm32(imm)
}

// movRI32 loads a 32-bit immediate zero-extended into a 64-bit register.
func (a *asm) movRI32(dst int, imm uint32) {
	a.rex(false, -1, -1, dst, false)
	a.emit(0xb8 | byte(dst&7))
	a.imm32(int32(imm))
}

// movRI64 loads a 64-bit constant, in the shortest form.
func (a *asm) movRI64(dst int, v uint64) {
	switch {
	case v <= 0xffff_ffff:
		a.movRI32(dst, uint32(v))
	case int64(v) >= -1<<31 && int64(v) < 1<<31:
		a.rex(true, -1, -1, dst, false)
		a.emit(0xc7)
		a.modrmReg(0, dst)
		a.imm32(int32(v))
	default:
		a.rex(true, -1, -1, dst, false)
		a.emit(0xb8 | byte(dst&7))
		a.imm64(v)
	}
}

// load: dst = [m] of size bytes, zero-extended (sign-extended with signed).
func (a *asm) load(size int, signed bool, dst int, m mem) {
	switch {
	case size == 1 && !signed:
		a.rm(4, []byte{0x0f, 0xb6}, dst, m)
	case size == 1:
		a.rm(8, []byte{0x0f, 0xbe}, dst, m)
	case size == 2 && !signed:
		a.rm(4, []byte{0x0f, 0xb7}, dst, m)
	case size == 2:
		a.rm(8, []byte{0x0f, 0xbf}, dst, m)
	case size == 4 && !signed:
		a.rm(4, []byte{0x8b}, dst, m)
	case size == 4:
		a.rm(8, []byte{0x63}, dst, m)
	default:
		a.rm(8, []byte{0x8b}, dst, m)
	}
}

// store: [m] = low size bytes of src.
func (a *asm) store(size int, m mem, src int) {
	if size == 1 {
		a.rm(1, []byte{0x88}, src, m)
		return
	}
	a.rm(size, []byte{0x89}, src, m)
}

// storeImm: [m] = imm (size 8: sign-extended imm32).
func (a *asm) storeImm(size int, m mem, imm int32) {
	switch size {
	case 1:
		a.rex(false, -1, -1, m.base, false)
		a.emit(0xc6)
		a.modrmMem(0, m)
		a.emit(byte(imm))
	case 2:
		a.emit(0x66)
		a.rex(false, -1, -1, m.base, false)
		a.emit(0xc7)
		a.modrmMem(0, m)
		a.emit(byte(imm), byte(imm>>8))
	default:
		a.rex(size == 8, -1, -1, m.base, false)
		a.emit(0xc7)
		a.modrmMem(0, m)
		a.imm32(imm)
	}
}

// lea: dst = address of m.
func (a *asm) lea(dst int, m mem) { a.rm(8, []byte{0x8d}, dst, m) }

// unary emits a group-3 operation (0xf7 /digit) on a register: 3 neg,
// 6 div, 7 idiv.
func (a *asm) unary(size int, digit int, r int) {
	a.prefix(size, -1, r, 0)
	a.emit(0xf7)
	a.modrmReg(digit, r)
}

// unaryM is unary on a memory operand.
func (a *asm) unaryM(size int, digit int, m mem) {
	a.rex(size == 8, -1, -1, m.base, false)
	a.emit(0xf7)
	a.modrmMem(digit, m)
}

// shiftRI: dst op= imm (imm already masked).
func (a *asm) shiftRI(size int, op int, dst int, imm uint8) {
	a.prefix(size, -1, dst, 0)
	if imm == 1 {
		a.emit(0xd1)
		a.modrmReg(op, dst)
		return
	}
	a.emit(0xc1)
	a.modrmReg(op, dst)
	a.emit(imm)
}

// shiftRCL: dst op= cl.
func (a *asm) shiftRCL(size int, op int, dst int) {
	a.prefix(size, -1, dst, 0)
	a.emit(0xd3)
	a.modrmReg(op, dst)
}

// imulRR: dst *= src.
func (a *asm) imulRR(size int, dst, src int) { a.rr(size, []byte{0x0f, 0xaf}, dst, src) }

// imulRRI: dst = src * imm.
func (a *asm) imulRRI(size int, dst, src int, imm int32) {
	a.prefix(size, dst, src, 0)
	if imm >= -128 && imm <= 127 {
		a.emit(0x6b)
		a.modrmReg(dst, src)
		a.emit(byte(int8(imm)))
		return
	}
	a.emit(0x69)
	a.modrmReg(dst, src)
	a.imm32(imm)
}

// movzx/movsx between registers: dst = extend(low from bytes of src).
func (a *asm) movzxRR(from int, dst, src int) {
	if from == 1 {
		a.prefix(4, dst, src, 2)
		a.emit(0x0f, 0xb6)
	} else {
		a.prefix(4, dst, src, 0)
		a.emit(0x0f, 0xb7)
	}
	a.modrmReg(dst, src)
}

func (a *asm) movsxRR(size, from int, dst, src int) {
	switch from {
	case 1:
		a.prefix(size, dst, src, 2)
		a.emit(0x0f, 0xbe)
	case 2:
		a.prefix(size, dst, src, 0)
		a.emit(0x0f, 0xbf)
	default:
		a.prefix(8, dst, src, 0)
		a.emit(0x63)
	}
	a.modrmReg(dst, src)
}

// bswap reverses the bytes of a 32- or 64-bit register.
func (a *asm) bswap(size int, r int) {
	a.rex(size == 8, -1, -1, r, false)
	a.emit(0x0f, 0xc8|byte(r&7))
}

// rol16by8 swaps the two low bytes of a register (rol r16, 8).
func (a *asm) rol16by8(r int) { a.shiftRI(2, shRol, r, 8) }

func (a *asm) push(r int) {
	a.rex(false, -1, -1, r, false)
	a.emit(0x50 | byte(r&7))
}

func (a *asm) pop(r int) {
	a.rex(false, -1, -1, r, false)
	a.emit(0x58 | byte(r&7))
}

// pushImm pushes a sign-extended 32-bit immediate.
func (a *asm) pushImm(imm int32) {
	a.emit(0x68)
	a.imm32(imm)
}

func (a *asm) ret() { a.emit(0xc3) }

func (a *asm) cqo() { a.emit(0x48, 0x99) }
func (a *asm) cdq() { a.emit(0x99) }

// lock-prefixed read-modify-write forms.
func (a *asm) lockALU(size int, op int, m mem, src int) {
	a.emit(0xf0)
	a.rm(size, []byte{byte(op<<3 | 1)}, src, m)
}

func (a *asm) lockXadd(size int, m mem, src int) {
	a.emit(0xf0)
	a.rm(size, []byte{0x0f, 0xc1}, src, m)
}

func (a *asm) xchg(size int, m mem, src int) { a.rm(size, []byte{0x87}, src, m) }

func (a *asm) lockCmpxchg(size int, m mem, src int) {
	a.emit(0xf0)
	a.rm(size, []byte{0x0f, 0xb1}, src, m)
}

// callM calls the address stored at [m].
func (a *asm) callM(m mem) {
	a.rex(false, -1, -1, m.base, false)
	a.emit(0xff)
	a.modrmMem(2, m)
}

// target returns the position of l for displacements: this pass's when
// already bound (backward), else the previous pass's (forward; exact once
// the layout has converged).
func (a *asm) target(l label) int32 {
	if p := a.pos[l]; p >= 0 {
		return p
	}
	if a.prev != nil {
		return a.prev[l]
	}
	return 0
}

// short reports whether the next jump, to l, can use a rel8 displacement,
// judged on the previous pass's layout.
func (a *asm) short(l label) bool {
	if a.allLong || a.prev == nil {
		return false
	}
	i := len(a.jumps)
	if i >= len(a.prevJmp) {
		return false
	}
	d := int64(a.prev[l]) - int64(a.prevJmp[i]+2)
	return d >= -128 && d <= 127
}

// jmp emits an unconditional jump to l.
func (a *asm) jmp(l label) {
	short := a.short(l)
	a.jumps = append(a.jumps, int32(len(a.b)))
	if short {
		d := a.target(l) - int32(len(a.b)+2)
		a.emit(0xeb, byte(int8(d)))
		return
	}
	d := a.target(l) - int32(len(a.b)+5)
	a.emit(0xe9)
	a.imm32(d)
}

// jcc emits a conditional jump to l.
func (a *asm) jcc(cc int, l label) {
	short := a.short(l)
	a.jumps = append(a.jumps, int32(len(a.b)))
	if short {
		d := a.target(l) - int32(len(a.b)+2)
		a.emit(0x70|byte(cc), byte(int8(d)))
		return
	}
	d := a.target(l) - int32(len(a.b)+6)
	a.emit(0x0f, 0x80|byte(cc))
	a.imm32(d)
}

// call emits a direct call to l.
func (a *asm) call(l label) {
	d := a.target(l) - int32(len(a.b)+5)
	a.emit(0xe8)
	a.imm32(d)
}

// leaRIP: dst = address of l.
func (a *asm) leaRIP(dst int, l label) {
	a.rex(true, dst, -1, -1, false)
	a.emit(0x8d, byte(dst&7)<<3|5)
	d := a.target(l) - int32(len(a.b)+4)
	a.imm32(d)
}

// callAbs emits a rel32 call to the absolute address target from code
// placed at base; the caller has checked that it is in reach.
func (a *asm) callAbs(base, target uint64) {
	next := base + uint64(len(a.b)) + 5
	a.emit(0xe8)
	a.imm32(int32(target - next))
}

// movabs loads a 64-bit constant with the 10-byte form whatever its value,
// so that its size does not depend on the value.
func (a *asm) movabs(dst int, v uint64) {
	a.rex(true, -1, -1, dst, false)
	a.emit(0xb8 | byte(dst&7))
	a.imm64(v)
}
