package verifier

import (
	"fmt"
	"math/bits"
)

// stackAccess checks a load or store through a stack pointer and updates
// the stack's byte marks (the kernel's check_stack_read/write).
func (v *verifier) stackAccess(ptr *Reg, a access) (Reg, error) {
	f := v.cur.frame(int(ptr.Frame))
	s := ptr.Scalar
	lo := int64(ptr.Off) + int64(a.off) + s.Smin
	hi := int64(ptr.Off) + int64(a.off) + s.Smax + int64(a.size)
	if lo < -MaxStack || hi > 0 || s.Smin < -MaxStack || s.Smax > MaxStack {
		dir := " read from"
		if a.write {
			dir = " write to"
		}
		if s.IsConst() {
			return Reg{}, v.errorf(a.pc, "invalid%s stack R%d off=%d size=%d", dir, a.reg, lo, a.size)
		}
		return Reg{}, v.errorf(a.pc, "invalid variable-offset%s stack R%d var_off=%s off=%d size=%d", dir, a.reg, s.Var, int64(ptr.Off)+int64(a.off), a.size)
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
	if a.size == 8 && a.val != nil && a.val.Type == PtrToStack && f.Number != len(v.cur.Frames)-1 {
		// A stack pointer kept in another function's frame could
		// outlive the frame it points into (a callee's, once it
		// returns); the kernel refuses every such spill.
		return v.errorf(a.pc, "cannot spill pointers to stack into stack frame of the caller")
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
// it is one (the kernel's save_register_state): any 8-byte register, and in
// privileged programs narrower stores of scalars and of immediates, whose
// value a fill of at most the same size gets back. Zeros narrower than the
// slot are kept as zero bytes instead, which later partial writes do not
// lose.
func (v *verifier) spill(slot *Slot, a access) bool {
	var r Reg
	switch {
	case a.val != nil && a.size == 8:
		r = *a.val
	case v.opts.Unprivileged:
		return false
	case a.val != nil && a.val.Type == ScalarValue && !(a.val.IsConst() && a.val.Const() == 0):
		r = *a.val
	case a.imm != nil && *a.imm != 0:
		r = constScalar(uint64(*a.imm))
	default:
		return false
	}
	if r.Type == ScalarValue && !r.IsConst() {
		if regWidth(&r) <= 8*a.size {
			// Link the register and its spill, as for a register copy.
			if r.ID == 0 && a.src != nil {
				a.src.ID = v.newID()
			}
			if a.src != nil {
				r.ID = a.src.ID
			}
		} else {
			r.ID = 0
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
				sp.ID = 0
			}
			sp.Scalar.Truncate(a.size)
			return sp, nil
		}
	}
	allZero := true
	for i := 0; i < a.size; i++ {
		switch t := slot.Types[first+i]; t {
		case StackInvalid:
			// Privileged programs may read stack they never wrote
			// (the kernel's allow_uninit_stack): the value is unknown.
			if v.opts.Unprivileged {
				return Reg{}, v.errorf(a.pc, "invalid read from stack off %d+%d size %d", off, i, a.size)
			}
			allZero = false
		case StackSpill:
			if !slot.Spilled.IsConst() || slot.Spilled.Const() != 0 {
				allZero = false
			}
		case StackMisc:
			allZero = false
		case StackIter:
			return Reg{}, v.errorf(a.pc, "invalid read from stack off %d+%d size %d", off, i, a.size)
		}
	}
	if allZero {
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
	for off := lo; off < hi; off++ {
		s, b := stackByte(f, off)
		if s.Types[b] == StackInvalid && v.opts.Unprivileged {
			return Reg{}, v.errorf(a.pc, "invalid variable-offset read from stack R%d var_off=%s off=%d size=%d", a.reg, ptr.Scalar.Var, ptr.Off+a.off, a.size)
		}
	}
	return v.loadedScalar(a.size), nil
}

// stackInitialized checks that [off, off+size) of a frame was written, for
// helper arguments that read memory.
func (v *verifier) stackInitialized(pc int, regno int, f *Frame, off, size int, uninitOK bool) error {
	for i := 0; i < size; i++ {
		s, b := stackByte(f, off+i)
		if uninitOK {
			if s.spilled() && s.Spilled.Type.IsPointer() && v.opts.Unprivileged {
				return v.errorf(pc, "R%d indirect write to spilled pointer", regno)
			}
			// The helper writes the memory: it becomes unknown bytes.
			s.scrub()
			s.Types[b] = StackMisc
			continue
		}
		if s.Types[b] == StackInvalid && v.opts.Unprivileged {
			return v.errorf(pc, "invalid read from stack R%d off %d+%d size %d", regno, off, i, size)
		}
		if s.spilled() && s.Spilled.Type.IsPointer() && v.opts.Unprivileged {
			return v.errorf(pc, "R%d leaks addr into helper function", regno)
		}
	}
	return nil
}

func slotString(s *Slot) string {
	if s.isSpill() {
		return regString(&s.Spilled)
	}
	if s.Types[0] == StackIter {
		return iterString(s) // iter.go
	}
	b := make([]byte, 8)
	for i, t := range s.Types {
		b[7-i] = "?rm0i"[t]
	}
	return fmt.Sprint(string(b))
}
