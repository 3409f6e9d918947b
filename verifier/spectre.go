package verifier

import (
	"errors"
	"math"
	"strings"

	"github.com/bpfvm/bpfvm/isa"
)

// Spectre mitigations for unprivileged programs, as the kernel applies
// them to loads without CAP_PERFMON (env->bypass_spec_v1 and
// bypass_spec_v4 false).
//
// Spectre v1 (bounds check bypass): the CPU may run the side of a branch
// the values rule out before the branch resolves. Where a comparison's
// outcome is known, the other side is explored too, as a speculative
// path whose compared registers are unknown scalars
// (sanitize_speculative_path); pointer arithmetic with a register pushes
// a speculative path on which the offset was masked to zero. An error on
// a speculative path does not reject the program: the instruction gets a
// barrier in front (InsnAux.Nospec) and the path ends, as the kernel's
// nospec error recovery. Pointer arithmetic with a register is masked at
// run time to the range verification proved (InsnAux.ALUState,
// ALULimit; the rewrite's Spectre pass), which requires that all paths
// agree on that range.
//
// Spectre v4 (speculative store bypass): a store to the stack over a
// spilled pointer, or of one, may be bypassed by a later load, which
// would see the old value. Such stores get a barrier after them
// (InsnAux.NospecResult), which also ends speculative paths there.

// ALUSanitize describes how the rewrite masks a pointer's offset at one
// ALU instruction (the kernel's alu_state).
type ALUSanitize uint8

// ALUSanitize flags, as the kernel's BPF_ALU_* sanitation states.
const (
	// ALUSanitizeSrc: the pointer is the destination and the offset the
	// source register.
	ALUSanitizeSrc ALUSanitize = 1 << iota
	// ALUSanitizeDst: the offset is the destination, the pointer the
	// source (scalar += pointer).
	ALUSanitizeDst
	// ALUNegValue: the offset is negative; the masking works on its
	// negation with the opposite operation.
	ALUNegValue
	// ALUNonPointer: the instruction adds scalars; nothing to mask.
	ALUNonPointer
	// ALUImmediate: the offset register holds a known constant, which
	// the rewrite replaces by the limit.
	ALUImmediate
)

// sanitizeInfo carries the first phase of sanitizePtrALU to its commit
// (the kernel's bpf_sanitize_info).
type sanitizeInfo struct {
	state      ALUSanitize
	limit      uint32
	maskToLeft bool
}

// Reasons sanitizePtrALU refuses, for sanitizeErr.
const (
	reasonBounds = iota + 1
	reasonType
	reasonPaths
	reasonLimit
	reasonStack
)

// speculate queues the state of a mispredicted branch to pc, the kernel's
// sanitize_speculative_path: a copy of the current state, speculative,
// whose compared registers are unknown scalars when ins is a comparison.
// edit, when set, changes the copy's frame further. Pointers into the
// current state's frames must be fetched again afterwards: they are
// shared with the copy until written.
func (v *verifier) speculate(ins *isa.Instruction, pc, from int, edit func(*Frame)) error {
	st := v.cloneState(v.cur)
	st.speculative = true
	if ins != nil {
		f := st.cur()
		f.Regs[ins.Dst] = unknownScalar()
		if ins.Op&isa.SrcX != 0 {
			f.Regs[ins.Src] = unknownScalar()
		}
	}
	if edit != nil {
		edit(st.cur())
	}
	return v.push(st, from, pc)
}

// recoverable reports whether err, met on a speculative path, ends that
// path behind a barrier instead of rejecting the program (the kernel's
// error_recoverable_with_nospec: EPERM, EACCES and EINVAL). Limits on the
// verification itself (E2BIG, ENOMEM) and internal errors stay fatal.
func recoverable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	for _, fatal := range []string{
		"BPF program is too large",
		"The sequence of ",
		"could not be pushed for speculative verification",
	} {
		if strings.Contains(e.Msg, fatal) {
			return false
		}
	}
	return true
}

// canSkipSanitize reports whether the ALU instruction at pc needs no
// masking (the kernel's can_skip_alu_sanitation): privileged programs,
// immediate operands, and instructions a barrier already guards.
func (v *verifier) canSkipSanitize(pc int, x bool) bool {
	return !v.opts.Unprivileged || !x || v.aux[pc].Nospec
}

// updateALUSanitize records how the instruction at pc is masked; paths
// must agree (the kernel's update_alu_sanitation_state).
func (v *verifier) updateALUSanitize(a *InsnAux, state ALUSanitize, limit uint32) int {
	if a.ALUState != 0 && (a.ALUState != state || a.ALULimit != limit) {
		return reasonPaths
	}
	a.ALUState, a.ALULimit = state, limit
	return 0
}

// sanitizeValALU marks an addition or subtraction of scalar registers,
// which must not share an instruction with pointer arithmetic another
// path does (the kernel's sanitize_val_alu).
func (v *verifier) sanitizeValALU(pc int, ins isa.Instruction) error {
	op := ins.Op & 0xf0
	if op != isa.ALUAdd && op != isa.ALUSub || v.canSkipSanitize(pc, ins.Op&isa.SrcX != 0) {
		return nil
	}
	if r := v.updateALUSanitize(&v.aux[pc], ALUNonPointer, 0); r != 0 {
		return v.sanitizeErr(pc, ins, r)
	}
	return nil
}

// ptrLimit is how far a pointer may move in the masked direction (the
// kernel's retrieve_ptr_limit).
func ptrLimit(ptr *Reg, maskToLeft bool) (uint32, int) {
	var max, limit uint32
	switch ptr.Type {
	case PtrToStack:
		// Offset 0 is out of bounds, but a fine start to the left.
		max = MaxStack
		if maskToLeft {
			max++
		}
		limit = uint32(-(int64(ptr.Scalar.Var.Value) + int64(ptr.Off)))
	case PtrToMapValue:
		max = ptr.Map.Spec.ValueSize
		b := ptr.Umax
		if maskToLeft {
			b = uint64(ptr.Smin)
		}
		limit = uint32(b + uint64(int64(ptr.Off)))
	default:
		return 0, reasonType
	}
	if limit >= max {
		return 0, reasonLimit
	}
	return limit, 0
}

// sanitizePtrALU applies the kernel's sanitize_ptr_alu to pointer
// arithmetic with a register in unprivileged programs. Before the
// operation (commit false) it checks the offset's sign is known and the
// pointer within what masking can limit, records the masking, and queues
// the speculative path on which the offset was masked to zero; after it
// (commit true, ptr the result), it narrows the limit to how far the
// pointer moved. ptrIsDst says the pointer is the destination register.
func (v *verifier) sanitizePtrALU(pc int, ins isa.Instruction, ptr *Reg, off Scalar, ptrIsDst bool, info *sanitizeInfo, commit bool) error {
	if v.canSkipSanitize(pc, ins.Op&isa.SrcX != 0) {
		return nil
	}
	offImm := off.Var.IsConst()
	offNeg := off.Smin < 0
	op := ins.Op & 0xf0
	if !v.cur.speculative {
		if !commit {
			if !offImm && (off.Smin < 0) != (off.Smax < 0) {
				return v.sanitizeErr(pc, ins, reasonBounds)
			}
			info.maskToLeft = op == isa.ALUAdd && offNeg || op == isa.ALUSub && !offNeg
		}
		limit, r := ptrLimit(ptr, info.maskToLeft)
		if r != 0 {
			return v.sanitizeErr(pc, ins, r)
		}
		var state ALUSanitize
		if commit {
			state = info.state
			d := int64(info.limit) - int64(limit)
			if d < 0 {
				d = -d
			}
			limit = uint32(d)
		} else {
			if offNeg {
				state |= ALUNegValue
			}
			if offImm {
				state |= ALUImmediate
			}
			if ptrIsDst {
				state |= ALUSanitizeSrc
			} else {
				state |= ALUSanitizeDst
			}
			if !offImm {
				// Prune less on unknown scalars, so that paths
				// masking differently are found.
				v.exploreALULimits = true
			}
		}
		if commit {
			if r := v.updateALUSanitize(&v.aux[pc], state, limit); r != 0 {
				return v.sanitizeErr(pc, ins, r)
			}
		} else {
			info.state, info.limit = state, limit
		}
	}
	if commit || offImm {
		// A constant offset becomes the limit itself: nothing to
		// truncate, nothing to simulate.
		return nil
	}
	// The masked offset may be zero under speculation: the pointer as it
	// was goes on from the next instruction, in the destination.
	var edit func(*Frame)
	if ptrIsDst {
		// As the kernel's, the pointer as the operation left it so
		// far: without 32-bit bounds (__mark_reg32_unbounded, before
		// any sync), which keeps the state from being covered by one
		// whose pointer has them.
		edit = func(f *Frame) {
			s := &f.Regs[ins.Dst].Scalar
			s.S32min, s.S32max, s.U32min, s.U32max = math.MinInt32, math.MaxInt32, 0, math.MaxUint32
		}
	} else {
		p := *ptr
		edit = func(f *Frame) { f.Regs[ins.Dst] = p }
	}
	if err := v.speculate(nil, pc+1, pc, edit); err != nil {
		return v.sanitizeErr(pc, ins, reasonStack)
	}
	return nil
}

// sanitizeErr words a refusal of sanitizePtrALU as the kernel's
// sanitize_err. Like the kernel's, it names the source register for the
// offset and the destination for the pointer even when scalar += pointer
// has them the other way round.
func (v *verifier) sanitizeErr(pc int, ins isa.Instruction, reason int) error {
	const tail = "pointer arithmetic with it prohibited for !root"
	what := "add"
	if ins.Op&0xf0 == isa.ALUSub {
		what = "sub"
	}
	offReg, ptrReg := ins.Src, ins.Dst
	switch reason {
	case reasonBounds:
		return v.errorf(pc, "R%d has unknown scalar with mixed signed bounds, %s", offReg, tail)
	case reasonType:
		return v.errorf(pc, "R%d has pointer with unsupported alu operation, %s", ptrReg, tail)
	case reasonPaths:
		return v.errorf(pc, "R%d tried to %s from different maps, paths or scalars, %s", ins.Dst, what, tail)
	case reasonLimit:
		return v.errorf(pc, "R%d tried to %s beyond pointer bounds, %s", ins.Dst, what, tail)
	default:
		return v.errorf(pc, "R%d could not be pushed for speculative verification, %s", ins.Dst, tail)
	}
}

// stackWriteNospec marks a store to the stack that needs a barrier after
// it against Spectre v4 (the kernel's check_stack_write_fixed_off): a
// pointer stored, or a slot holding anything but unknown or zero bytes.
// As the kernel, it looks at the slot's first size bytes in its own
// order, which counts from the slot's highest address.
func (v *verifier) stackWriteNospec(slot *Slot, a access) {
	if !v.opts.Unprivileged {
		return
	}
	sanitize := a.val != nil && a.val.Type.IsPointer()
	for i := 0; i < a.size && !sanitize; i++ {
		if t := slot.Types[7-i]; t != StackMisc && t != StackZero {
			sanitize = true
		}
	}
	if sanitize {
		v.aux[a.pc].NospecResult = true
	}
}
