package verifier

import (
	"math"
	"math/bits"

	"github.com/bpfvm/bpfvm/isa"
)

// rel is the relation a conditional jump tests, or its negation.
type rel uint8

const (
	relEQ rel = iota
	relNE
	relGT
	relLE
	relGE
	relLT
	relSGT
	relSLE
	relSGE
	relSLT
	relSET  // a&b != 0
	relNSET // a&b == 0
)

// negate returns the relation that holds exactly when r does not. The
// constants are laid out in pairs.
func (r rel) negate() rel { return r ^ 1 }

// relOf maps a jump operation (isa.Jump*, without class or source bits) to
// the relation it tests.
func relOf(op uint8) (rel, bool) {
	switch op {
	case isa.JumpEQ:
		return relEQ, true
	case isa.JumpNE:
		return relNE, true
	case isa.JumpGT:
		return relGT, true
	case isa.JumpGE:
		return relGE, true
	case isa.JumpLT:
		return relLT, true
	case isa.JumpLE:
		return relLE, true
	case isa.JumpSGT:
		return relSGT, true
	case isa.JumpSGE:
		return relSGE, true
	case isa.JumpSLT:
		return relSLT, true
	case isa.JumpSLE:
		return relSLE, true
	case isa.JumpSet:
		return relSET, true
	}
	return 0, false
}

// BranchTaken reports whether the conditional jump op (isa.JumpEQ ...
// isa.JumpSLE, isa.JumpSet) on a and b is always taken (1), never taken (0)
// or may go either way (-1), comparing all 64 bits or, if is32, the low 32
// bits. The kernel's is_branch_taken for two scalars. Comparisons and
// equality are decided exactly; JSET is exact when it is never taken, and
// when one side is a constant.
func BranchTaken(op uint8, a, b Scalar, is32 bool) int {
	r, ok := relOf(op)
	if !ok {
		return -1
	}
	a.Sync()
	b.Sync()
	if !a.Valid() || !b.Valid() {
		return -1
	}
	switch {
	case always(r, a, b, is32):
		return 1
	case always(r.negate(), a, b, is32):
		return 0
	}
	return -1
}

// always reports whether r holds for every pair of values of a and b, both
// synced and valid.
func always(r rel, a, b Scalar, is32 bool) bool {
	w := uint(64)
	va, vb := a.view64(), b.view64()
	if is32 {
		w, va, vb = 32, a.view32(), b.view32()
	}
	switch r {
	case relEQ:
		return va.t.IsConst() && vb.t.IsConst() && va.t.Value == vb.t.Value
	case relNE:
		m := meet(a, b, is32)
		return !m.Valid()
	case relGT:
		return va.umin > vb.umax
	case relGE:
		return va.umin >= vb.umax
	case relLT:
		return va.umax < vb.umin
	case relLE:
		return va.umax <= vb.umin
	case relSGT:
		return va.smin > vb.smax
	case relSGE:
		return va.smin >= vb.smax
	case relSLT:
		return va.smax < vb.smin
	case relSLE:
		return va.smax <= vb.smin
	case relSET:
		if va.t.Value&vb.t.Value != 0 {
			return true
		}
		// Against a constant: no value of the other side clears it.
		if vb.t.IsConst() && !clearedBy(a, vb.t.Value, w).Valid() {
			return true
		}
		return va.t.IsConst() && !clearedBy(b, va.t.Value, w).Valid()
	case relNSET:
		return (va.t.Value|va.t.Mask)&(vb.t.Value|vb.t.Mask) == 0
	}
	return false
}

// meet returns the values of a that b may equal, on all 64 bits or, if
// is32, on the low halves only (then zero-extended).
func meet(a, b Scalar, is32 bool) Scalar {
	if is32 {
		a, b = fromView32(a.view32()), fromView32(b.view32())
	}
	if !a.Var.Overlaps(b.Var) {
		return emptyScalar()
	}
	m := Scalar{
		Var:  a.Var.Intersect(b.Var),
		Smin: max(a.Smin, b.Smin), Smax: min(a.Smax, b.Smax),
		Umin: max(a.Umin, b.Umin), Umax: min(a.Umax, b.Umax),
		S32min: max(a.S32min, b.S32min), S32max: min(a.S32max, b.S32max),
		U32min: max(a.U32min, b.U32min), U32max: min(a.U32max, b.U32max),
	}
	m.Sync()
	return m
}

// clearedBy returns the values x of s with x&c == 0 (c confined to w bits).
func clearedBy(s Scalar, c uint64, w uint) Scalar {
	c &= widthMask(w)
	if s.Var.Value&c != 0 {
		return emptyScalar()
	}
	s.Var.Mask &^= c
	s.Sync()
	return s
}

// Refine narrows a and b to the values for which the conditional jump op
// (as in BranchTaken) goes the way taken says: the kernel's
// regs_refine_cond_op followed by reg_bounds_sync. Both are synced. When no
// pair of values can go that way, both become invalid (see Valid) and the
// caller can drop the branch. a and b may be the same register.
func Refine(op uint8, a, b *Scalar, is32 bool, taken bool) {
	r, ok := relOf(op)
	if !ok {
		return
	}
	if !taken {
		r = r.negate()
	}
	if a == b {
		refineSame(r, a, is32)
		return
	}
	x, y := *a, *b
	refine(r, &x, &y, is32)
	x.Sync()
	y.Sync()
	if !x.Valid() || !y.Valid() {
		x, y = emptyScalar(), emptyScalar()
	}
	*a, *b = x, y
}

// refineSame narrows a register compared with itself.
func refineSame(r rel, a *Scalar, is32 bool) {
	zero := Const(0)
	switch r {
	case relNE, relGT, relLT, relSGT, relSLT:
		*a = emptyScalar()
		return
	case relSET: // x&x != 0: x != 0
		refine(relNE, a, &zero, is32)
	case relNSET: // x&x == 0: x == 0
		refine(relEQ, a, &zero, is32)
	}
	a.Sync()
}

// refine applies the relation x r y to both sides without syncing.
func refine(r rel, x, y *Scalar, is32 bool) {
	w := uint(64)
	if is32 {
		w = 32
	}
	switch r {
	case relEQ:
		m := meet(*x, *y, is32)
		if !is32 {
			*x, *y = m, m
			return
		}
		if !m.Valid() {
			*x = emptyScalar()
			return
		}
		setLow(x, m)
		setLow(y, m)
	case relNE:
		vx, vy := x.view64(), y.view64()
		if is32 {
			vx, vy = x.view32(), y.view32()
		}
		if vy.t.IsConst() {
			exclude(x, vy.t.Value, is32)
		}
		if vx.t.IsConst() {
			exclude(y, vx.t.Value, is32)
		}
	case relGT:
		less(y, x, true, false, is32)
	case relGE:
		less(y, x, false, false, is32)
	case relLT:
		less(x, y, true, false, is32)
	case relLE:
		less(x, y, false, false, is32)
	case relSGT:
		less(y, x, true, true, is32)
	case relSGE:
		less(y, x, false, true, is32)
	case relSLT:
		less(x, y, true, true, is32)
	case relSLE:
		less(x, y, false, true, is32)
	case relSET:
		mask := widthMask(w)
		both := (x.Var.Value | x.Var.Mask) & (y.Var.Value | y.Var.Mask) & mask
		if both == 0 {
			*x = emptyScalar()
			return
		}
		if bits.OnesCount64(both) == 1 {
			// The only bit both may have must be set in both.
			setBit(x, both)
			setBit(y, both)
		}
		excludeCleared(x, *y, w)
		excludeCleared(y, *x, w)
	case relNSET:
		mask := widthMask(w)
		// A bit one side has set is clear in the other.
		clearBits(x, y.Var.Value&mask)
		clearBits(y, x.Var.Value&mask)
	}
}

// setLow replaces the low-half constraints of s by those of m.
func setLow(s *Scalar, m Scalar) {
	s.Var = s.Var.WithSubreg(m.Var)
	s.U32min, s.U32max = max(s.U32min, m.U32min), min(s.U32max, m.U32max)
	s.S32min, s.S32max = max(s.S32min, m.S32min), min(s.S32max, m.S32max)
}

// exclude removes the value v from the edges of s's bounds (of the low
// halves if is32); Sync takes it from there.
func exclude(s *Scalar, v uint64, is32 bool) {
	if is32 {
		u, i := uint32(v), int32(v)
		switch {
		case s.U32min == u && s.U32max == u, s.S32min == i && s.S32max == i:
			*s = emptyScalar()
			return
		case s.U32min == u:
			s.U32min++
		case s.U32max == u:
			s.U32max--
		}
		switch {
		case s.S32min == i:
			s.S32min++
		case s.S32max == i:
			s.S32max--
		}
		return
	}
	i := int64(v)
	switch {
	case s.Umin == v && s.Umax == v, s.Smin == i && s.Smax == i:
		*s = emptyScalar()
		return
	case s.Umin == v:
		s.Umin++
	case s.Umax == v:
		s.Umax--
	}
	switch {
	case s.Smin == i:
		s.Smin++
	case s.Smax == i:
		s.Smax--
	}
}

// less narrows x < y (strict) or x <= y, signed or unsigned, on 64 bits or
// the low halves.
func less(x, y *Scalar, strict, signed, is32 bool) {
	var d uint64
	if strict {
		d = 1
	}
	switch {
	case !signed && !is32:
		if strict && (y.Umax == 0 || x.Umin == math.MaxUint64) {
			*x = emptyScalar()
			return
		}
		x.Umax = min(x.Umax, y.Umax-d)
		y.Umin = max(y.Umin, x.Umin+d)
	case signed && !is32:
		if strict && (y.Smax == math.MinInt64 || x.Smin == math.MaxInt64) {
			*x = emptyScalar()
			return
		}
		x.Smax = min(x.Smax, y.Smax-int64(d))
		y.Smin = max(y.Smin, x.Smin+int64(d))
	case !signed && is32:
		if strict && (y.U32max == 0 || x.U32min == math.MaxUint32) {
			*x = emptyScalar()
			return
		}
		x.U32max = min(x.U32max, y.U32max-uint32(d))
		y.U32min = max(y.U32min, x.U32min+uint32(d))
	default:
		if strict && (y.S32max == math.MinInt32 || x.S32min == math.MaxInt32) {
			*x = emptyScalar()
			return
		}
		x.S32max = min(x.S32max, y.S32max-int32(d))
		y.S32min = max(y.S32min, x.S32min+int32(d))
	}
}

// setBit makes the bits of b known ones in s.
func setBit(s *Scalar, b uint64) {
	s.Var = Tnum{Value: s.Var.Value | b, Mask: s.Var.Mask &^ b}
}

// clearBits makes the bits of b known zeros in s, or s invalid if it has
// one of them known set.
func clearBits(s *Scalar, b uint64) {
	if s.Var.Value&b != 0 {
		*s = emptyScalar()
		return
	}
	s.Var.Mask &^= b
}

// excludeCleared handles x&c != 0 against a constant c: if the values of x
// that c clears all share one value (on the compared width), that value is
// excluded from x's bounds.
func excludeCleared(x *Scalar, c Scalar, w uint) {
	vc := c.view64()
	if w == 32 {
		vc = c.view32()
	}
	if !vc.t.IsConst() {
		return
	}
	z := clearedBy(*x, vc.t.Value, w)
	switch {
	case !z.Valid():
	case w == 64 && z.Var.IsConst():
		exclude(x, z.Var.Value, false)
	case w == 32 && z.Var.SubregIsConst():
		exclude(x, z.Var.Value, true)
	}
}
