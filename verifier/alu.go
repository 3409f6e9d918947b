package verifier

import (
	"math"

	"github.com/bpfvm/bpfvm/isa"
)

// maxVarOff bounds pointer offsets (the kernel's BPF_MAX_VAR_OFF).
const maxVarOff = 1 << 29

func unknownScalar() Reg { return Reg{Type: ScalarValue, Scalar: Unknown()} }

func constScalar(v uint64) Reg { return Reg{Type: ScalarValue, Scalar: Const(v)} }

// readReg checks that register r may be read.
func (v *verifier) readReg(pc int, r isa.Register) (*Reg, error) {
	reg := &v.cur.cur().Regs[r]
	if reg.Type == NotInit {
		return nil, v.errorf(pc, "R%d !read_ok", r)
	}
	return reg, nil
}

// checkWriteReg checks that the instruction at pc may write register r: the
// frame pointer is read only. The kernel checks this on the paths it
// explores only, so isa.Validate leaves it to the verifier (and to the
// engines' isa.ValidateXlated, for unverified programs).
func (v *verifier) checkWriteReg(pc int, r isa.Register) error {
	if r == isa.R10 {
		return v.errorf(pc, "frame pointer is read only")
	}
	return nil
}

// aluOpString is the operator as the kernel's messages print it.
var aluOpString = map[uint8]string{
	isa.ALUAdd: "+=", isa.ALUSub: "-=", isa.ALUMul: "*=", isa.ALUDiv: "/=", isa.ALUOr: "|=",
	isa.ALUAnd: "&=", isa.ALULsh: "<<=", isa.ALURsh: ">>=", isa.ALUNeg: "neg", isa.ALUMod: "%=",
	isa.ALUXor: "^=", isa.ALUMov: "=", isa.ALUArsh: "s>>=", isa.ALUEnd: "endian",
}

func (v *verifier) checkALU(pc int, ins isa.Instruction) error {
	f := v.cur.cur()
	op := ins.Op & 0xf0
	is64 := ins.Class() == isa.ClassALU64
	x := ins.Op&isa.SrcX != 0
	dst := &f.Regs[ins.Dst]

	switch op {
	case isa.ALUNeg, isa.ALUEnd:
		if _, err := v.readReg(pc, ins.Dst); err != nil {
			return err
		}
		if err := v.checkWriteReg(pc, ins.Dst); err != nil {
			return err
		}
		if dst.Type != ScalarValue {
			if v.opts.Unprivileged {
				return v.errorf(pc, "R%d pointer arithmetic prohibited", ins.Dst)
			}
			*dst = unknownScalar()
		}
		switch {
		case op == isa.ALUNeg:
			dst.Scalar.ALU(isa.ALUNeg, Const(0), is64, false)
		case !is64 && !x: // to little endian
			dst.Scalar.ToLE(int(ins.Imm))
		default: // to big endian, or bswap
			dst.Scalar.Bswap(int(ins.Imm))
		}
		dst.ID = 0
		return nil
	case isa.ALUMov:
		return v.checkMov(pc, ins, is64, x)
	}

	if _, err := v.readReg(pc, ins.Dst); err != nil {
		return err
	}
	var src Reg
	if x {
		s, err := v.readReg(pc, ins.Src)
		if err != nil {
			return err
		}
		src = *s
	} else {
		if (op == isa.ALUDiv || op == isa.ALUMod) && ins.Imm == 0 {
			return v.errorf(pc, "div by zero")
		}
		width := int32(32)
		if is64 {
			width = 64
		}
		if (op == isa.ALULsh || op == isa.ALURsh || op == isa.ALUArsh) && (ins.Imm < 0 || ins.Imm >= width) {
			return v.errorf(pc, "invalid shift %d", ins.Imm)
		}
		src = constScalar(uint64(int64(ins.Imm)))
		if !is64 {
			src.Scalar = Const(uint64(uint32(ins.Imm)))
		}
	}
	if err := v.checkWriteReg(pc, ins.Dst); err != nil {
		return err
	}

	if dst.Type == PtrToArena {
		return v.arenaALU(pc, ins, dst) // arena.go
	}
	if dst.Type.IsPointer() || src.Type.IsPointer() {
		return v.pointerALU(pc, ins, dst, &src, op, is64, x)
	}
	if err := v.sanitizeValALU(pc, ins); err != nil {
		return err
	}
	signed := (op == isa.ALUDiv || op == isa.ALUMod) && ins.Off == 1
	if isShift(op) && !shiftComputable(src.Scalar, is64) || op == isa.ALUDiv || op == isa.ALUMod {
		// The kernel computes a shift's result only for a constant
		// amount below the width, and never a division's or modulo's,
		// even of constants (is_safe_to_compute_dst_reg_range): the
		// whole register becomes unknown, even in 32-bit form (no
		// zero-extension). Our domain could do better (Scalar.divMod),
		// but a program we accepted would then not load in the
		// kernel. Sound for the runtime, which masks shift amounts.
		dst.Scalar = Unknown()
		dst.ID = 0
		dst.Precise = false
		return nil
	}
	if dst.IsConst() && src.IsConst() {
		if r, ok := evalALU(op, dst.Const(), src.Const(), is64, signed); ok {
			dst.Scalar = Const(r)
			dst.ID, dst.Off = 0, 0
			dst.Precise = false
			return nil
		}
	}
	linked := dst.ID
	dst.Scalar = v.scalarALU(op, dst.Scalar, src.Scalar, is64, signed)
	dst.ID, dst.Off = 0, 0
	dst.Precise = false
	if linked != 0 && linked&linkDelta == 0 && is64 && src.IsConst() && !v.opts.Unprivileged {
		// A copy moved by a constant stays linked to the value it was
		// copied from, once (the kernel's BPF_ADD_CONST, for programs
		// with CAP_BPF): off fits 32 bits, as the kernel requires.
		c := int64(src.Const())
		if op == isa.ALUSub {
			c = -c
			if c == math.MinInt32 {
				c = math.MaxInt64 // -(-2^31) does not fit
			}
		}
		if (op == isa.ALUAdd || op == isa.ALUSub) && c >= math.MinInt32 && c <= math.MaxInt32 {
			dst.ID, dst.Off = linked|linkDelta, int32(c)
		}
	}
	return nil
}

// linkForCopy gives a scalar about to be copied (to a register or a stack
// slot) an ID the copy shares. A scalar linked with an offset loses that
// link first: a copy cannot be moved again (the kernel's
// assign_scalar_id_before_mov).
func (v *verifier) linkForCopy(src *Reg) {
	if src.Type != ScalarValue {
		return
	}
	if src.ID&linkDelta != 0 {
		src.ID, src.Off = 0, 0
	}
	if src.ID == 0 && !src.IsConst() {
		src.ID = v.newID()
	}
}

func isShift(op uint8) bool {
	return op == isa.ALULsh || op == isa.ALURsh || op == isa.ALUArsh
}

// shiftComputable reports whether the kernel computes the result of a shift
// by src (is_safe_to_compute_dst_reg_range): src must be a constant in the
// operation's width and its 64-bit value below the width.
func shiftComputable(src Scalar, is64 bool) bool {
	if is64 {
		return src.IsConst() && src.Umax < 64
	}
	return src.Var.SubregIsConst() && src.U32min == src.U32max && src.S32min == src.S32max && src.Umax < 32
}

func (v *verifier) checkMov(pc int, ins isa.Instruction, is64, x bool) error {
	f := v.cur.cur()
	dst := &f.Regs[ins.Dst]
	if !x {
		if err := v.checkWriteReg(pc, ins.Dst); err != nil {
			return err
		}
		if is64 {
			*dst = constScalar(uint64(int64(ins.Imm)))
		} else {
			*dst = constScalar(uint64(uint32(ins.Imm)))
		}
		return nil
	}
	if is64 && ins.Off == isa.AddrSpaceCast {
		return v.addrSpaceCast(pc, ins) // arena.go
	}
	src, err := v.readReg(pc, ins.Src)
	if err != nil {
		return err
	}
	if err := v.checkWriteReg(pc, ins.Dst); err != nil {
		return err
	}
	if ins.Off != 0 { // movsx
		if src.Type != ScalarValue {
			if v.opts.Unprivileged {
				return v.errorf(pc, "R%d sign-extension part of pointer", ins.Src)
			}
			*dst = unknownScalar()
			return nil
		}
		s := src.Scalar
		s.MovSX(int(ins.Off)/8, is64)
		*dst = Reg{Type: ScalarValue, Scalar: s}
		return nil
	}
	if is64 {
		// Link the copies so that a bound learned on one applies to
		// the other (the kernel's find_equal_scalars).
		v.linkForCopy(src)
		*dst = *src
		return nil
	}
	if src.Type != ScalarValue {
		if v.opts.Unprivileged {
			return v.errorf(pc, "R%d partial copy of pointer", ins.Src)
		}
		*dst = unknownScalar()
		dst.Scalar.Truncate(4)
		return nil
	}
	s := src.Scalar
	s.Truncate(4)
	*dst = Reg{Type: ScalarValue, Scalar: s}
	return nil
}

// pointerALU handles arithmetic where dst or src is a pointer, the kernel's
// adjust_ptr_min_max_vals.
func (v *verifier) pointerALU(pc int, ins isa.Instruction, dst, src *Reg, op uint8, is64, x bool) error {
	opStr := aluOpString[op]
	// Subtracting pointers (or, in 32 bits, anything from a pointer)
	// yields a meaningless scalar that privileged programs may compute.
	if dst.Type.IsPointer() && src.Type.IsPointer() {
		if op == isa.ALUSub && !v.opts.Unprivileged {
			*dst = unknownScalar()
			return nil
		}
		return v.errorf(pc, "R%d pointer %s pointer prohibited", ins.Dst, opStr)
	}
	if !is64 {
		if op == isa.ALUSub && !v.opts.Unprivileged {
			*dst = unknownScalar()
			return nil
		}
		return v.errorf(pc, "R%d 32-bit pointer arithmetic prohibited", ins.Dst)
	}
	ptr, off := dst, src
	offReg := ins.Src
	if src.Type.IsPointer() {
		if op == isa.ALUSub {
			return v.errorf(pc, "R%d tried to subtract pointer from scalar", ins.Dst)
		}
		ptr, off, offReg = src, dst, ins.Dst
	}
	if x {
		// The scalar's bounds become the pointer's and decide whether
		// the arithmetic is allowed.
		v.markRegPrecise(offReg)
	}
	switch op {
	case isa.ALUAdd, isa.ALUSub:
	case isa.ALUAnd, isa.ALUOr, isa.ALUXor:
		return v.errorf(pc, "R%d bitwise operator %s on pointer prohibited", ins.Dst, opStr)
	default:
		return v.errorf(pc, "R%d pointer arithmetic with %s operator prohibited", ins.Dst, opStr)
	}
	if ptr.maybeNull() {
		return v.errorf(pc, "R%d pointer arithmetic on %s prohibited, null-check it first", ins.Dst, regTypeString(ptr))
	}
	switch ptr.Type {
	case ConstPtrToMap:
		// Adding a known zero leaves the map pointer as it is.
		if op == isa.ALUAdd && off.Scalar.IsConst() && off.Scalar.Const() == 0 {
			break
		}
		return v.errorf(pc, "R%d pointer arithmetic on %s prohibited", ins.Dst, ptr.Type)
	case PtrToPacketEnd, PtrToFunc, PtrToXDPSock, PtrToSockCommon, PtrToSocket, PtrToTCPSock:
		return v.errorf(pc, "R%d pointer arithmetic on %s prohibited", ins.Dst, ptr.Type)
	case PtrToFlowKeys:
		if !off.Scalar.IsConst() {
			return v.errorf(pc, "R%d pointer arithmetic on %s prohibited", ins.Dst, ptr.Type)
		}
	}
	if op == isa.ALUSub && ptr.Type == PtrToStack {
		// As the kernel: JITs may not cope with subtraction from fp.
		return v.errorf(pc, "R%d subtraction from stack pointer prohibited", ins.Dst)
	}
	name := ptrKindName(ptr.Type)
	s := off.Scalar
	if s.IsConst() {
		c := int64(s.Const())
		if c >= maxVarOff || c <= -maxVarOff {
			return v.errorf(pc, "math between %s pointer and %d is not allowed", name, c)
		}
	} else {
		if s.Smin == minInt64 {
			return v.errorf(pc, "math between %s pointer and register with unbounded min value is not allowed", name)
		}
		if s.Smin >= maxVarOff || s.Smin <= -maxVarOff {
			return v.errorf(pc, "value %d makes %s pointer be out of bounds", s.Smin, name)
		}
	}
	var san sanitizeInfo
	ptrIsDst := ptr == dst
	if err := v.sanitizePtrALU(pc, ins, ptr, s, ptrIsDst, &san, false); err != nil {
		return err
	}
	// The speculative copy shares the frame: fetch the registers again.
	dst = &v.cur.cur().Regs[ins.Dst]
	if ptrIsDst {
		ptr = dst
	}
	res := *ptr
	if s.IsConst() {
		c := int64(s.Const())
		if op == isa.ALUSub {
			c = -c
		}
		newOff := int64(ptr.Off) + c
		if newOff >= maxVarOff || newOff <= -maxVarOff {
			return v.errorf(pc, "R%d pointer offset %d is not allowed", ins.Dst, newOff)
		}
		res.Off = int32(newOff)
		if res.Range < 0 {
			// Where the pointer stood against pkt_end (jmp.go) is no
			// longer where it stands.
			res.Range = 0
		}
	} else {
		res.Scalar.ALU(op, s, true, false)
		if res.Scalar.Smin <= -maxVarOff || res.Scalar.Smin >= maxVarOff {
			return v.errorf(pc, "value %d makes %s pointer be out of bounds", res.Scalar.Smin, name)
		}
		if res.Type.isPacket() {
			// Something unknown was added: the proven range no longer
			// applies to this pointer.
			res.ID = v.newID()
			res.Range = 0
		}
	}
	if v.opts.Unprivileged {
		if err := v.sanitizeBounds(pc, ins.Dst, &res); err != nil {
			return err
		}
	}
	if err := v.sanitizePtrALU(pc, ins, &res, s, ptrIsDst, &san, true); err != nil {
		return err
	}
	*dst = res
	return nil
}

// sanitizeBounds requires an unprivileged program's stack or map value
// pointer to stay in bounds after arithmetic, so that later accesses can
// be masked (the kernel's sanitize_check_bounds).
func (v *verifier) sanitizeBounds(pc int, dstReg isa.Register, r *Reg) error {
	switch r.Type {
	case PtrToStack:
		off := int64(r.Off) + int64(r.Scalar.Var.Value)
		if !r.Scalar.Var.IsConst() {
			return v.errorf(pc, "R%d variable stack access prohibited for !root, var_off=%s off=%d", dstReg, r.Scalar.Var, off)
		}
		if off >= 0 || off < -MaxStack {
			return v.errorf(pc, "R%d stack pointer arithmetic goes out of range, prohibited for !root; off=%d", dstReg, off)
		}
	case PtrToMapValue:
		lo := int64(r.Off) + r.Scalar.Smin
		hi := int64(r.Off) + int64(r.Scalar.Umax)
		if r.Scalar.Smin < 0 || lo < 0 || r.Scalar.Umax >= uint64(maxVarOff) || hi+1 > int64(r.Map.Spec.ValueSize) {
			return v.errorf(pc, "R%d pointer arithmetic of map value goes out of range, prohibited for !root", dstReg)
		}
	}
	return nil
}

// ptrKindName names pointer types in "math between ... pointer" messages.
func ptrKindName(t RegType) string {
	switch t {
	case PtrToPacket, PtrToPacketMeta:
		return "pkt"
	case PtrToStack:
		return "fp"
	}
	return t.String()
}

const minInt64 = -1 << 63
