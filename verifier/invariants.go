package verifier

// Register invariants (the kernel's reg_bounds_sanity_check): a scalar's
// bounds must describe a value it can hold, and a known value must agree
// with all of them. The domain keeps them consistent (Scalar.Sync), so a
// broken one is a verifier bug; with BPF_F_TEST_REG_INVARIANTS it fails
// verification as in the kernel, which its selftests load every program
// with.

// checkRegInvariants checks the scalars of the current frame after the
// instruction at pc (the kernel checks those an ALU operation or a branch
// just changed; the others were checked when they changed).
func (v *verifier) checkRegInvariants(pc int) error {
	if len(v.cur.Frames) == 0 {
		return nil
	}
	for i := range v.cur.top().Regs {
		r := &v.cur.top().Regs[i]
		if r.Type != ScalarValue {
			continue
		}
		if msg := invariantBroken(r.Scalar); msg != "" {
			s := r.Scalar
			return v.errorf(pc, "verifier bug: REG INVARIANTS VIOLATION (R%d): %s u64=[%#x, %#x] s64=[%#x, %#x] u32=[%#x, %#x] s32=[%#x, %#x] var_off=(%#x, %#x)",
				i, msg, s.Umin, s.Umax, uint64(s.Smin), uint64(s.Smax), s.U32min, s.U32max, uint32(s.S32min), uint32(s.S32max), s.Var.Value, s.Var.Mask)
		}
	}
	return nil
}

// invariantBroken says which invariant s breaks, or "".
func invariantBroken(s Scalar) string {
	switch {
	case s.Umin > s.Umax || s.Smin > s.Smax || s.U32min > s.U32max || s.S32min > s.S32max:
		return "range bounds violation"
	case s.Var.IsConst() && (s.Umin != s.Var.Value || s.Umax != s.Var.Value || s.Smin != int64(s.Var.Value) || s.Smax != int64(s.Var.Value)):
		return "const tnum out of sync with range bounds"
	}
	if sub := uint32(s.Var.Value); uint32(s.Var.Mask) == 0 && (s.U32min != sub || s.U32max != sub || s.S32min != int32(sub) || s.S32max != int32(sub)) {
		return "const subreg tnum out of sync with range bounds"
	}
	return ""
}
