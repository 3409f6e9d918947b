package verifier

import (
	"fmt"
	"math/bits"

	"github.com/bpfvm/bpfvm/isa"
)

// stackAccess checks a load or store through a stack pointer and updates
// the stack's byte marks (the kernel's check_stack_read/write).
func (v *verifier) stackAccess(ptr *Reg, a access) (Reg, error) {
	f := v.cur.frame(int(ptr.Frame))
	s := ptr.Scalar
	lo, hi, err := v.stackBounds(a.pc, a.reg, ptr, int64(ptr.Off)+int64(a.off), a.size, a.write)
	if err != nil {
		return Reg{}, err
	}
	v.noteStackDepth(f, int(-lo))
	if !s.IsConst() {
		return v.stackVarAccess(f, ptr, a, int(lo), int(hi))
	}
	off := int(lo)
	v.noteStackAccess(a.pc, int(ptr.Frame), (-off-1)/8)
	if a.write {
		return Reg{}, v.stackWrite(f, a, off)
	}
	return v.stackRead(f, a, off)
}

// stackBounds checks that an access of size bytes at ptr plus off stays in
// the stack (the kernel's check_stack_access_within_bounds), for loads,
// stores and helpers alike, and returns the range it may touch. Variable
// offsets must be bounded by BPF_MAX_VAR_OFF first: the sums below cannot
// overflow then.
func (v *verifier) stackBounds(pc int, regno isa.Register, ptr *Reg, off int64, size int, write bool) (lo, hi int64, err error) {
	s := ptr.Scalar
	dir := " read from"
	if write {
		dir = " write to"
	}
	c := s.IsConst()
	if c {
		lo = off + int64(s.Const())
		if int64(s.Const()) >= maxVarOff || int64(s.Const()) <= -maxVarOff {
			lo = 1 // out of bounds, whatever the sum
		}
		hi = lo + int64(size)
	} else {
		if s.Smax >= maxVarOff || s.Smin <= -maxVarOff {
			return 0, 0, v.errorf(pc, "invalid unbounded variable-offset%s stack R%d", dir, regno)
		}
		lo, hi = s.Smin+off, s.Smax+off+int64(size)
	}
	// Unprivileged, a read must stay in the stack accessed so far (the
	// kernel's allocated_stack: without allow_uninit_stack it bounds
	// reads, not writes).
	floor := int64(-MaxStack)
	if v.opts.Unprivileged && !write {
		floor = -8 * int64(len(v.cur.frame(int(ptr.Frame)).Stack))
	}
	if lo < floor || lo > -1 || hi > 0 {
		if c {
			return 0, 0, v.errorf(pc, "invalid%s stack R%d off=%d size=%d", dir, regno, lo, size)
		}
		return 0, 0, v.errorf(pc, "invalid variable-offset%s stack R%d var_off=%s off=%d size=%d", dir, regno, s.Var, off, size)
	}
	return lo, hi, nil
}

// noteStackDepth records how deep a function's stack goes.
func (v *verifier) noteStackDepth(f *Frame, depth int) {
	depth = (depth + 7) &^ 7
	if s := &v.subs[f.Subprog]; depth > s.StackDepth {
		s.StackDepth = depth
	}
}

// stackByte returns the slot and byte index of fp+off.
func stackByte(f *Frame, off int) (*Slot, int) {
	s := f.slot(off)
	return s, (off%8 + 8) % 8
}

func (v *verifier) stackWrite(f *Frame, a access, off int) error {
	// Stack accesses are aligned (checkAlign): a write stays in one slot.
	slot, first := stackByte(f, off)
	if slot.isSpill() && a.size != 8 && slot.Spilled.Type.IsPointer() && v.opts.Unprivileged {
		return v.errorf(a.pc, "attempt to corrupt spilled pointer on stack")
	}
	v.stackWriteNospec(slot, a) // spectre.go
	if a.size == 8 && a.val != nil && a.val.Type == PtrToStack && f.Number != len(v.cur.Frames)-1 {
		// A stack pointer kept in another function's frame could
		// outlive the frame it points into (a callee's, once it
		// returns); the kernel refuses every such spill.
		return v.errorf(a.pc, "cannot spill pointers to stack into stack frame of the caller")
	}
	// A write into either half of a dynptr destroys it whole, or is
	// refused if it holds a reference (the kernel's
	// destroy_if_dynptr_stack_slot, before anything is written).
	if err := v.destroyDynptr(a.pc, f, off); err != nil {
		return err
	}
	if first == 0 && v.spill(slot, a) {
		return nil
	}
	zero := (a.imm != nil && *a.imm == 0) || (a.val != nil && a.val.Type == ScalarValue && a.val.IsConst() && a.val.Const() == 0)
	if a.val != nil && a.val.Type.IsPointer() {
		// Pointers are spilled whole or not at all.
		return v.errorf(a.pc, "invalid size of register spill")
	}
	mark := StackMisc
	if zero {
		mark = StackZero
		if a.val != nil {
			// Zero bytes are not traced back to the register.
			v.markRegPrecise(a.valReg)
		}
	}
	// Part of a spilled register is overwritten: the rest of it is no
	// longer a register, just bytes.
	slot.scrub()
	scrubIter(slot)
	for i := 0; i < a.size; i++ {
		slot.Types[first+i] = mark
	}
	return nil
}

// spill records a store at the start of a slot as a spilled register when
// it is one (the kernel's check_stack_write_fixed_off): any 8-byte
// register, and in privileged programs narrower stores of scalars and
// every store of an immediate, zero too, whose value a fill of at most the
// same size gets back. Like any spill, a later partial write leaves the
// rest of the slot unknown bytes. Only unaligned zero stores (and
// unprivileged ones) are kept as zero bytes.
func (v *verifier) spill(slot *Slot, a access) bool {
	var r Reg
	switch {
	case a.val != nil && a.size == 8 && (a.val.Type.IsPointer() || !v.opts.Unprivileged):
		r = *a.val
	case v.opts.Unprivileged:
		// Unprivileged, only pointers are spilled registers: scalars
		// are bytes, unknown or zero (the kernel saves a scalar only
		// when bpf_capable).
		return false
	case a.val != nil && a.val.Type == ScalarValue:
		r = *a.val
	case a.imm != nil:
		r = constScalar(uint64(*a.imm))
	default:
		return false
	}
	if r.Type == ScalarValue && !r.IsConst() {
		if regWidth(&r) <= 8*a.size {
			// Link the register and its spill, as for a register copy.
			if a.src != nil {
				v.linkForCopy(a.src)
				r.ID, r.Off = a.src.ID, a.src.Off
			}
		} else {
			r.ID, r.Off = 0, 0
		}
	}
	slot.Spilled = r
	for i := range slot.Types {
		switch {
		case i < a.size:
			slot.Types[i] = StackSpill
		case slot.Types[i] == StackSpill:
			slot.Types[i] = StackMisc
		}
	}
	return true
}

// regWidth is the number of bits a scalar's unsigned values need.
func regWidth(r *Reg) int { return bits.Len64(r.Umax) }

func (v *verifier) stackRead(f *Frame, a access, off int) (Reg, error) {
	slot, first := stackByte(f, off)
	if slot.isSpill() {
		n, sp := slot.spillSize(), slot.Spilled
		if a.size == 8 && n == 8 {
			return sp, nil
		}
		if sp.Type != ScalarValue {
			return Reg{}, v.errorf(a.pc, "invalid size of register fill")
		}
		if first == 0 && a.size <= n {
			// A fill of the spilled register's low bytes.
			if regWidth(&sp) > 8*a.size {
				sp.ID, sp.Off = 0, 0
			}
			sp.Scalar.Truncate(a.size)
			return sp, nil
		}
	}
	// Zero when every byte read is a zero byte, or every one belongs to
	// a spilled zero; a mix of the two is unknown, as in the kernel's
	// check_stack_read_fixed_off.
	spills, zeros := 0, 0
	for i := 0; i < a.size; i++ {
		switch t := slot.Types[first+i]; t {
		case StackInvalid:
			// Privileged programs may read stack they never wrote
			// (the kernel's allow_uninit_stack): the value is unknown.
			if v.opts.Unprivileged {
				return Reg{}, v.errorf(a.pc, "invalid read from stack off %d+%d size %d", off, i, a.size)
			}
		case StackSpill:
			spills++
		case StackZero:
			zeros++
		case StackIter, StackDynptr:
			return Reg{}, v.errorf(a.pc, "invalid read from stack off %d+%d size %d", off, i, a.size)
		}
	}
	if zeros == a.size || spills == a.size && slot.Spilled.IsConst() && slot.Spilled.Const() == 0 {
		return constScalar(0), nil
	}
	return v.loadedScalar(a.size), nil
}

// stackVarAccess handles accesses at a variable stack offset: reads need
// every byte in the range initialised, writes make every byte unknown.
func (v *verifier) stackVarAccess(f *Frame, ptr *Reg, a access, lo, hi int) (Reg, error) {
	if v.opts.Unprivileged {
		return Reg{}, v.errorf(a.pc, "R%d variable stack access prohibited for !root, var_off=%s off=%d", a.reg, ptr.Scalar.Var, ptr.Off+a.off)
	}
	if a.write {
		for off := lo; off < hi; off += 8 - (off%8+8)%8 {
			if err := v.destroyDynptr(a.pc, f, off); err != nil {
				return Reg{}, err
			}
		}
		// Every byte in range may be written: spilled registers there
		// are destroyed (a pointer written is just bytes).
		for off := lo; off < hi; off++ {
			s, b := stackByte(f, off)
			s.scrub()
			scrubIter(s)
			if s.Types[b] != StackZero || a.imm == nil || *a.imm != 0 {
				s.Types[b] = StackMisc
			}
		}
		return Reg{}, nil
	}
	// The kernel checks the range as for helpers: iterators, for one,
	// may not be read.
	if err := v.stackRangeInit(a.pc, a.reg, ptr, f, int64(lo), int64(hi), a.size, false); err != nil {
		return Reg{}, err
	}
	return v.loadedScalar(a.size), nil
}

// helperStack checks a helper's access to size bytes of the stack at reg
// (the kernel's check_stack_range_initialized). A fill of uninitialised
// memory (raw) at a constant offset is only recorded: it is marked after
// the call's arguments are checked (applyRawWrite). Any other access needs
// every byte initialised (or, privileged, never written) or a spilled
// scalar (privileged, any spilled register); a write makes the bytes
// unknown and turns spilled registers into unknown bytes. Iterators are
// neither read nor written this way.
func (v *verifier) helperStack(pc int, regno isa.Register, reg *Reg, size int, write, raw bool, rw *rawWrite) error {
	lo, hi, err := v.stackBounds(pc, regno, reg, int64(reg.Off), size, write)
	if err != nil {
		return err
	}
	f := v.cur.frame(int(reg.Frame))
	v.noteStackDepth(f, int(-lo))
	c := reg.IsConst()
	if !c && v.opts.Unprivileged {
		return v.errorf(pc, "R%d variable offset stack access prohibited for !root, var_off=%s", regno, reg.Scalar.Var)
	}
	if raw && c {
		if err := v.rawOverDynptr(pc, f, lo, hi); err != nil {
			return err
		}
		*rw = rawWrite{set: true, regno: regno, frame: int(reg.Frame), off: int(lo), size: size}
		return nil
	}
	return v.stackRangeInit(pc, regno, reg, f, lo, hi, size, write)
}

// stackRangeInit checks that [lo, hi) of a frame may be read: initialised
// bytes (privileged, any) or spilled scalars (privileged, any spilled
// register), not iterators. write makes the bytes unknown and spilled
// registers unknown bytes.
func (v *verifier) stackRangeInit(pc int, regno isa.Register, reg *Reg, f *Frame, lo, hi int64, size int, write bool) error {
	for off := int(lo); off < int(hi); off++ {
		s, b := stackByte(f, off)
		switch t := s.Types[b]; {
		case t == StackMisc:
		case t == StackZero || t == StackInvalid && !v.opts.Unprivileged:
			if write {
				s.Types[b] = StackMisc
			}
		case s.isSpill() && (s.Spilled.Type == ScalarValue || !v.opts.Unprivileged):
			if write {
				s.scrub()
			}
		case reg.IsConst():
			return v.errorf(pc, "invalid read from stack R%d off %d+%d size %d", regno, lo, int64(off)-lo, size)
		default:
			return v.errorf(pc, "invalid read from stack R%d var_off %s+%d size %d", regno, reg.Scalar.Var, int64(off)-lo, size)
		}
	}
	return nil
}

func (v *verifier) slotString(s *Slot) string {
	if s.isSpill() {
		return v.regString(&s.Spilled)
	}
	if s.Types[0] == StackIter {
		return iterString(s) // iter.go
	}
	if s.Types[0] == StackDynptr {
		return dynptrString(s) // dynptr.go
	}
	b := make([]byte, 8)
	for i, t := range s.Types {
		b[7-i] = "?rm0id"[t]
	}
	return fmt.Sprint(string(b))
}
