package verifier

import (
	"math"
	"strings"
)

// Scalar is the abstract value of a scalar register: a tnum and unsigned
// and signed bounds of the full 64-bit value and of its low 32 bits, like
// the scalar part of the kernel's struct bpf_reg_state. The concrete values
// it describes are those that satisfy all nine constraints at once.
//
// Every constructor and operation returns a synced Scalar (see Sync); code
// that writes the fields directly should call Sync afterwards.
type Scalar struct {
	// Var holds the known bits of the 64-bit value.
	Var Tnum
	// Smin and Smax bound the value as a signed number.
	Smin, Smax int64
	// Umin and Umax bound the value as an unsigned number.
	Umin, Umax uint64
	// S32min and S32max bound the low 32 bits as a signed number.
	S32min, S32max int32
	// U32min and U32max bound the low 32 bits as an unsigned number.
	U32min, U32max uint32
}

// Unknown returns the scalar that may hold any value.
func Unknown() Scalar {
	return Scalar{
		Var:  TnumUnknown(),
		Smin: math.MinInt64, Smax: math.MaxInt64,
		Umin: 0, Umax: math.MaxUint64,
		S32min: math.MinInt32, S32max: math.MaxInt32,
		U32min: 0, U32max: math.MaxUint32,
	}
}

// Const returns the scalar holding exactly v.
func Const(v uint64) Scalar {
	return Scalar{
		Var:  TnumConst(v),
		Smin: int64(v), Smax: int64(v),
		Umin: v, Umax: v,
		S32min: int32(v), S32max: int32(v),
		U32min: uint32(v), U32max: uint32(v),
	}
}

// Const32 returns the scalar holding v zero-extended to 64 bits, what a
// 32-bit move of v leaves in a register.
func Const32(v uint32) Scalar { return Const(uint64(v)) }

// URange returns the scalar holding any value in the unsigned range
// [min, max].
func URange(min, max uint64) Scalar {
	s := Unknown()
	s.Umin, s.Umax = min, max
	s.Sync()
	return s
}

// SRange returns the scalar holding any value in the signed range
// [min, max].
func SRange(min, max int64) Scalar {
	s := Unknown()
	s.Smin, s.Smax = min, max
	s.Sync()
	return s
}

// FromTnum returns the scalar holding any value of t.
func FromTnum(t Tnum) Scalar {
	s := Unknown()
	s.Var = t
	s.Sync()
	return s
}

// emptyScalar returns the scalar that holds no value, with every range
// inverted.
func emptyScalar() Scalar {
	return Scalar{
		Var:  TnumConst(0),
		Smin: math.MaxInt64, Smax: math.MinInt64,
		Umin: math.MaxUint64, Umax: 0,
		S32min: math.MaxInt32, S32max: math.MinInt32,
		U32min: math.MaxUint32, U32max: 0,
	}
}

// IsConst reports whether s holds exactly one value.
func (s Scalar) IsConst() bool { return s.Var.IsConst() && s.Contains(s.Var.Value) }

// Const returns the value of a constant scalar (see IsConst).
func (s Scalar) Const() uint64 { return s.Var.Value }

// IsUnknown reports whether s may hold any value.
func (s Scalar) IsUnknown() bool { return s == Unknown() }

// Contains reports whether the concrete value v satisfies the tnum and all
// eight bounds of s.
func (s Scalar) Contains(v uint64) bool {
	return s.Var.Contains(v) &&
		v >= s.Umin && v <= s.Umax &&
		int64(v) >= s.Smin && int64(v) <= s.Smax &&
		uint32(v) >= s.U32min && uint32(v) <= s.U32max &&
		int32(v) >= s.S32min && int32(v) <= s.S32max
}

// Valid reports whether s holds at least one value. A branch refinement that
// finds the branch impossible leaves its operands invalid.
func (s Scalar) Valid() bool {
	if s.Umin > s.Umax || s.Smin > s.Smax || s.U32min > s.U32max || s.S32min > s.S32max {
		return false
	}
	s.Var.Value &^= s.Var.Mask
	var acc cellAcc
	s.cells(&acc)
	return acc.ok
}

// In reports whether every value of s is also a value of old, so that a
// state holding s is covered by one holding old (the kernel's range_within
// and tnum_in, used for pruning). It is exact when s is synced. An invalid
// s is in everything.
func (s Scalar) In(old Scalar) bool {
	if !s.Valid() {
		return true
	}
	return old.Umin <= s.Umin && s.Umax <= old.Umax &&
		old.Smin <= s.Smin && s.Smax <= old.Smax &&
		old.U32min <= s.U32min && s.U32max <= old.U32max &&
		old.S32min <= s.S32min && s.S32max <= old.S32max &&
		s.Var.In(old.Var)
}

// Sync makes every part of s as tight as the others allow, the kernel's
// reg_bounds_sync done exactly: afterwards each bound is the minimum or
// maximum of the values s holds, in its order and width, and Var knows
// exactly the bits all of them share. Sync is idempotent. If s holds no
// value it becomes the canonical invalid scalar.
func (s *Scalar) Sync() {
	if s.Var.IsUnknown() && *s == Unknown() {
		return
	}
	s.Var.Value &^= s.Var.Mask
	var acc cellAcc
	s.cells(&acc)
	if !acc.ok {
		*s = emptyScalar()
		return
	}
	*s = Scalar{
		Var:  acc.t,
		Smin: acc.smin, Smax: acc.smax,
		Umin: acc.umin, Umax: acc.umax,
		S32min: acc.s32min, S32max: acc.s32max,
		U32min: acc.u32min, U32max: acc.u32max,
	}
}

// The values a scalar holds are split into at most twelve product cells
// {h<<32 | l : h in H, l in L}, where H and L are each a 32-bit interval
// intersected with a 32-bit tnum. Every bound and the tnum of a product of
// such sets are computed exactly, which makes Sync exact:
//
//   - the unsigned and signed 64-bit ranges intersect into at most two
//     intervals, one per sign half, in which both orders agree;
//   - likewise the 32-bit ranges give at most two intervals of low halves;
//   - for a 64-bit interval [a, b] and a low interval J the values are: high
//     half a>>32 with low halves in J above a's, high halves strictly between
//     with any low half in J, and high half b>>32 with low halves in J below
//     b's;
//   - the smallest tnum of (interval ∩ tnum) is the tnum intersected with
//     the range of the exact minimum and maximum, and a tnum is per bit, so
//     the tnum of a product is the concatenation of the halves' tnums.

// span is an inclusive interval lo <= hi.
type span struct{ lo, hi uint64 }

// halves intersects an unsigned and a signed range of width w (32 or 64
// bits; unsigned values zero-extended, signed sign-extended) into at most
// two intervals of w-bit patterns, non-negative half first.
func halves(umin, umax uint64, smin, smax int64, w uint) (out [2]span, n int) {
	sign := uint64(1) << (w - 1)
	mask := widthMask(w)
	if smax >= 0 && umin < sign {
		lo, hi := umin, min(umax, sign-1, uint64(smax))
		lo = max(lo, uint64(max(smin, 0)))
		if lo <= hi {
			out[n] = span{lo, hi}
			n++
		}
	}
	if smin < 0 && umax >= sign {
		lo := max(umin, sign, uint64(smin)&mask)
		hi := min(umax, uint64(min(smax, -1))&mask)
		if lo <= hi {
			out[n] = span{lo, hi}
			n++
		}
	}
	return out, n
}

// cellAcc accumulates the exact bounds and tnum of a union of cells.
type cellAcc struct {
	ok             bool
	t              Tnum
	umin, umax     uint64
	smin, smax     int64
	u32min, u32max uint32
	s32min, s32max int32
}

// cells feeds every product cell of s into acc.
func (s *Scalar) cells(acc *cellAcc) {
	p64, n64 := halves(s.Umin, s.Umax, s.Smin, s.Smax, 64)
	p32, n32 := halves(uint64(s.U32min), uint64(s.U32max), int64(s.S32min), int64(s.S32max), 32)
	th, tl := s.Var.Rsh(32), s.Var.Subreg()
	for _, i := range p64[:n64] {
		ah, al := i.lo>>32, i.lo&0xffffffff
		bh, bl := i.hi>>32, i.hi&0xffffffff
		for _, j := range p32[:n32] {
			if ah == bh {
				acc.product(th, tl, ah, ah, max(al, j.lo), min(bl, j.hi))
				continue
			}
			acc.product(th, tl, ah, ah, max(al, j.lo), j.hi)
			if bh-ah >= 2 {
				acc.product(th, tl, ah+1, bh-1, j.lo, j.hi)
			}
			acc.product(th, tl, bh, bh, j.lo, min(bl, j.hi))
		}
	}
}

// product adds the cell {h<<32 | l : h in [hlo, hhi] ∩ th, l in [llo, lhi] ∩
// tl}. The cells come from intervals inside one sign half of each width, so
// signed and unsigned orders agree within a cell.
func (acc *cellAcc) product(th, tl Tnum, hlo, hhi, llo, lhi uint64) {
	if hlo > hhi || llo > lhi {
		return
	}
	hmin, ok := th.next(hlo)
	if !ok || hmin > hhi {
		return
	}
	lmin, ok := tl.next(llo)
	if !ok || lmin > lhi {
		return
	}
	hmax, _ := th.prev(hhi)
	lmax, _ := tl.prev(lhi)
	lo, hi := hmin<<32|lmin, hmax<<32|lmax
	ht := th.Intersect(TnumRange(hmin, hmax))
	lt := tl.Intersect(TnumRange(lmin, lmax))
	t := Tnum{Value: ht.Value<<32 | lt.Value, Mask: ht.Mask<<32 | lt.Mask}
	if !acc.ok {
		*acc = cellAcc{
			ok: true, t: t,
			umin: lo, umax: hi, smin: int64(lo), smax: int64(hi),
			u32min: uint32(lmin), u32max: uint32(lmax),
			s32min: int32(lmin), s32max: int32(lmax),
		}
		return
	}
	acc.t = acc.t.Union(t)
	acc.umin, acc.umax = min(acc.umin, lo), max(acc.umax, hi)
	acc.smin, acc.smax = min(acc.smin, int64(lo)), max(acc.smax, int64(hi))
	acc.u32min, acc.u32max = min(acc.u32min, uint32(lmin)), max(acc.u32max, uint32(lmax))
	acc.s32min, acc.s32max = min(acc.s32min, int32(lmin)), max(acc.s32max, int32(lmax))
}

// String formats s as the kernel's verifier log prints a scalar register:
// a constant as its value, anything else as "scalar(...)" listing the bounds
// that are not the defaults, with equal bounds merged, and the tnum unless
// it is unknown.
func (s Scalar) String() string {
	if s.Var.IsConst() && s.Valid() {
		return formatSnum(int64(s.Var.Value))
	}
	var b strings.Builder
	b.WriteString("scalar(")
	sep := s.writeRanges(&b)
	if !s.Var.IsUnknown() {
		b.WriteString(sep)
		b.WriteString("var_off=")
		b.WriteString(s.Var.String())
	}
	b.WriteString(")")
	return b.String()
}

// writeRanges writes the bounds as the kernel's print_scalar_ranges and
// returns the separator for what follows.
func (s Scalar) writeRanges(b *strings.Builder) string {
	// The 32-bit signed bounds are sign-extended when printed in decimal
	// and shown as 32-bit patterns in hex, so that hex values never look
	// like 64-bit ones.
	s32 := func(v int32) uint64 {
		if v >= -0x8000 && v <= 0x7fff {
			return uint64(int64(v))
		}
		return uint64(uint32(v))
	}
	type bound struct {
		name string
		val  uint64
		omit bool
	}
	bs := [...]bound{
		{"smin", uint64(s.Smin), s.Smin == math.MinInt64},
		{"smax", uint64(s.Smax), s.Smax == math.MaxInt64},
		{"umin", s.Umin, s.Umin == 0},
		{"umax", s.Umax, s.Umax == math.MaxUint64},
		{"smin32", s32(s.S32min), s.S32min == math.MinInt32},
		{"smax32", s32(s.S32max), s.S32max == math.MaxInt32},
		{"umin32", uint64(s.U32min), s.U32min == 0},
		{"umax32", uint64(s.U32max), s.U32max == math.MaxUint32},
	}
	neg := func(x bound) bool { return x.name[0] == 's' && int64(x.val) < 0 }
	sep := ""
	for i := range bs {
		if bs[i].omit {
			continue
		}
		b.WriteString(sep)
		b.WriteString(bs[i].name)
		b.WriteString("=")
		sep = ","
		// Mins merge with mins and maxes with maxes, never a negative
		// signed value with an unsigned one.
		for j := i + 2; j < len(bs); j += 2 {
			if bs[j].omit || bs[j].val != bs[i].val || neg(bs[j]) != neg(bs[i]) {
				continue
			}
			bs[j].omit = true
			b.WriteString(bs[j].name)
			b.WriteString("=")
		}
		if bs[i].name[0] == 's' {
			b.WriteString(formatSnum(int64(bs[i].val)))
		} else {
			b.WriteString(formatUnum(bs[i].val))
		}
	}
	return sep
}

// widthMask returns the mask of the low w bits (1 <= w <= 64).
func widthMask(w uint) uint64 { return ^uint64(0) >> (64 - w) }

// sext sign-extends the low w bits of v.
func sext(v uint64, w uint) int64 { return int64(v<<(64-w)) >> (64 - w) }
