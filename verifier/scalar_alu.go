package verifier

import (
	"math"
	"math/bits"

	"github.com/bpfvm/bpfvm/isa"
)

// ShiftOK reports whether a shift by the immediate imm is valid for an ALU64
// (is64) or ALU instruction. The verifier rejects the others, as the kernel
// does; shifts by a register are always allowed and use the amount masked
// to the width, as the runtime does.
func ShiftOK(imm int32, is64 bool) bool {
	if is64 {
		return imm >= 0 && imm < 64
	}
	return imm >= 0 && imm < 32
}

// ALU sets s to the result of the operation op (one of the isa.ALU*
// operations, without class or source bits) on s and src, in 64-bit
// (is64) or 32-bit form. A 32-bit result is zero-extended. signed selects
// sdiv and smod for isa.ALUDiv and isa.ALUMod. As the runtime does (RFC
// 9669), division by zero gives 0, modulo by zero leaves s (in 32-bit form
// its low half, zero-extended), shift amounts are masked to the width and
// INT_MIN / -1 is INT_MIN. isa.ALUNeg ignores src; isa.ALUMov copies it;
// isa.ALUEnd is Bswap, ToLE and ToBE.
//
// The result is sound for any inputs and as precise as the kernel's or more
// when the inputs are synced.
func (s *Scalar) ALU(op uint8, src Scalar, is64, signed bool) {
	switch op {
	case isa.ALUMov:
		if !is64 {
			src.Truncate(4)
		}
		*s = src
		return
	case isa.ALULsh, isa.ALURsh, isa.ALUArsh:
		s.shift(op, src, is64)
	case isa.ALUDiv, isa.ALUMod:
		s.divMod(op, src, is64, signed)
	case isa.ALUAdd, isa.ALUSub, isa.ALUMul, isa.ALUAnd, isa.ALUOr, isa.ALUXor, isa.ALUNeg:
		if op == isa.ALUNeg {
			src, *s = *s, Const(0)
			op = isa.ALUSub
		}
		if !is64 {
			*s = fromView32(binW(op, s.view32(), src.view32(), 32))
			break
		}
		// These operations commute with truncation, so the low halves
		// have their own precise bounds.
		r32 := binW(op, s.view32(), src.view32(), 32)
		*s = fromView64(binW(op, s.view64(), src.view64(), 64), &r32)
	default:
		*s = Unknown()
	}
	s.Sync()
}

// Bswap swaps the bytes of the low n bits (16, 32 or 64) of s, zero-extended:
// the ALU64 bswap and, on a little-endian host, the to-big-endian END.
func (s *Scalar) Bswap(n int) {
	t := s.Var
	switch n {
	case 16:
		t = Tnum{uint64(bits.ReverseBytes16(uint16(t.Value))), uint64(bits.ReverseBytes16(uint16(t.Mask)))}
	case 32:
		t = Tnum{uint64(bits.ReverseBytes32(uint32(t.Value))), uint64(bits.ReverseBytes32(uint32(t.Mask)))}
	case 64:
		t = Tnum{bits.ReverseBytes64(t.Value), bits.ReverseBytes64(t.Mask)}
	default:
		*s = Unknown()
		return
	}
	if !s.Valid() {
		*s = emptyScalar()
		return
	}
	// A byte swap scrambles the order; only the tnum survives.
	*s = FromTnum(t)
}

// ToLE converts the low n bits (16, 32 or 64) of s to little-endian, which
// on a little-endian host, like the interpreter's, zero-extends them.
func (s *Scalar) ToLE(n int) {
	if n < 64 {
		s.Truncate(n / 8)
	}
}

// ToBE converts the low n bits (16, 32 or 64) of s to big-endian, which on a
// little-endian host swaps their bytes.
func (s *Scalar) ToBE(n int) { s.Bswap(n) }

// Truncate keeps the low size bytes (1, 2 or 4) of s, zero-extended: a load
// of that size from a slot that held s, or a 32-bit move (the kernel's
// coerce_reg_to_size). Size 8 leaves s unchanged.
func (s *Scalar) Truncate(size int) {
	if size <= 0 || size >= 8 {
		return
	}
	k := uint(size) * 8
	*s = fromLow(s.lowView(k), k, false)
	s.Sync()
}

// SignExtendLoad sign-extends the low size bytes (1, 2 or 4) of s to 64
// bits, what a BPF_MEMSX load of that size from a slot that held s gives.
func (s *Scalar) SignExtendLoad(size int) {
	if size <= 0 || size >= 8 {
		return
	}
	k := uint(size) * 8
	*s = fromLow(s.lowView(k), k, true)
	s.Sync()
}

// MovSX sets s to its low size bytes (1, 2 or 4) sign-extended to 64 bits
// (is64) or to 32 bits then zero-extended: the sign-extending moves. A
// 32-bit move of 4 bytes is a plain 32-bit move.
func (s *Scalar) MovSX(size int, is64 bool) {
	if size < 4 || is64 {
		s.SignExtendLoad(size)
	}
	if !is64 {
		s.Truncate(4)
	}
}

// view is a scalar seen at one width w (32 or 64 bits, or fewer for
// truncation): a tnum confined to w bits and the unsigned and signed hulls,
// unsigned values zero-extended and signed ones sign-extended. umin > umax
// marks an empty view.
type view struct {
	t          Tnum
	umin, umax uint64
	smin, smax int64
}

func (s Scalar) view64() view {
	return view{t: s.Var, umin: s.Umin, umax: s.Umax, smin: s.Smin, smax: s.Smax}
}

func (s Scalar) view32() view {
	return view{
		t:    s.Var.Subreg(),
		umin: uint64(s.U32min), umax: uint64(s.U32max),
		smin: int64(s.S32min), smax: int64(s.S32max),
	}
}

func (v view) pieces(w uint) ([2]span, int) { return halves(v.umin, v.umax, v.smin, v.smax, w) }

func (v view) empty() bool { return v.umin > v.umax }

func constView(c uint64, w uint) view {
	c &= widthMask(w)
	return view{t: TnumConst(c), umin: c, umax: c, smin: sext(c, w), smax: sext(c, w)}
}

func emptyView() view { return view{umin: 1, umax: 0, smin: 1, smax: 0} }

// join returns a view of every value of v and of o.
func (v view) join(o view) view {
	switch {
	case v.empty():
		return o
	case o.empty():
		return v
	}
	return view{
		t:    v.t.Union(o.t),
		umin: min(v.umin, o.umin), umax: max(v.umax, o.umax),
		smin: min(v.smin, o.smin), smax: max(v.smax, o.smax),
	}
}

// meet returns a view of the values in both v and o, two sound views of the
// same result.
func (v view) meet(o view) view {
	if v.empty() || o.empty() || !v.t.Overlaps(o.t) {
		return emptyView()
	}
	r := view{
		t:    v.t.Intersect(o.t),
		umin: max(v.umin, o.umin), umax: min(v.umax, o.umax),
		smin: max(v.smin, o.smin), smax: min(v.smax, o.smax),
	}
	if r.umin > r.umax || r.smin > r.smax {
		return emptyView()
	}
	return r
}

// fromView64 builds a scalar from a 64-bit result and, if known, a result
// for the low halves.
func fromView64(r view, r32 *view) Scalar {
	if r.empty() || (r32 != nil && r32.empty()) {
		return emptyScalar()
	}
	s := Unknown()
	s.Var, s.Umin, s.Umax, s.Smin, s.Smax = r.t, r.umin, r.umax, r.smin, r.smax
	if r32 != nil {
		s.Var = s.Var.WithSubreg(r.t.Subreg().Intersect(r32.t))
		s.U32min, s.U32max = uint32(r32.umin), uint32(r32.umax)
		s.S32min, s.S32max = int32(r32.smin), int32(r32.smax)
	}
	return s
}

// fromView32 builds the scalar of a 32-bit result zero-extended.
func fromView32(r view) Scalar {
	if r.empty() {
		return emptyScalar()
	}
	return Scalar{
		Var:  r.t.Subreg(),
		Umin: r.umin, Umax: r.umax,
		Smin: int64(r.umin), Smax: int64(r.umax),
		U32min: uint32(r.umin), U32max: uint32(r.umax),
		S32min: int32(r.smin), S32max: int32(r.smax),
	}
}

// lowView returns the view of the low k bits of s.
func (s Scalar) lowView(k uint) view {
	mask := widthMask(k)
	h := newHull(k)
	ps, n := halves(s.Umin, s.Umax, s.Smin, s.Smax, 64)
	for _, p := range ps[:n] {
		h.addArc(p.lo, p.hi-p.lo)
	}
	if k <= 32 {
		h32 := newHull(k)
		ps, n := halves(uint64(s.U32min), uint64(s.U32max), int64(s.S32min), int64(s.S32max), 32)
		for _, p := range ps[:n] {
			h32.addArc(p.lo, p.hi-p.lo)
		}
		h = h.meet(h32)
	}
	return h.view(Tnum{s.Var.Value & mask, s.Var.Mask & mask})
}

// fromLow builds the 64-bit scalar of the k-bit values of v, zero- or
// sign-extended.
func fromLow(v view, k uint, signExt bool) Scalar {
	if v.empty() {
		return emptyScalar()
	}
	h64, h32 := newHull(64), newHull(32)
	ps, n := v.pieces(k)
	for _, p := range ps[:n] {
		lo, hi := p.lo, p.hi
		if signExt {
			// Each piece lies in one sign half, so it stays an interval.
			lo, hi = uint64(sext(lo, k)), uint64(sext(hi, k))
		}
		h64.addArc(lo, hi-lo)
		h32.addArc(lo, hi-lo)
	}
	t := v.t
	if signExt {
		t = t.Lsh(uint8(64-k)).Arsh(uint8(64-k), 64)
	}
	r32 := h32.view(t.Subreg())
	return fromView64(h64.view(t), &r32)
}

// arcHull accumulates the unsigned and signed hulls, at width w, of a union
// of arcs: runs of consecutive values modulo 2^w, which is what the exact
// result of adding, subtracting or multiplying intervals is.
type arcHull struct {
	w          uint
	ok         bool
	umin, umax uint64
	smin, smax int64
}

func newHull(w uint) arcHull { return arcHull{w: w} }

// addArc adds base, base+1, ..., base+size modulo 2^w.
func (h *arcHull) addArc(base, size uint64) {
	mask := widthMask(h.w)
	base &= mask
	if size >= mask {
		h.add(0, mask, sext(mask>>1+1, h.w), sext(mask>>1, h.w))
		return
	}
	end := (base + size) & mask
	umin, umax := base, end
	if base > end { // wraps past the unsigned maximum
		umin, umax = 0, mask
	}
	smin, smax := sext(base, h.w), sext(end, h.w)
	if smin > smax { // wraps past the signed maximum
		smin, smax = sext(mask>>1+1, h.w), sext(mask>>1, h.w)
	}
	h.add(umin, umax, smin, smax)
}

// addMagnitudes adds the values with absolute value in [lo, hi], negated if
// neg, as w-bit patterns.
func (h *arcHull) addMagnitudes(lo, hi uint64, neg bool) {
	if neg {
		h.addArc(-hi, hi-lo)
	} else {
		h.addArc(lo, hi-lo)
	}
}

func (h *arcHull) add(umin, umax uint64, smin, smax int64) {
	if !h.ok {
		h.ok, h.umin, h.umax, h.smin, h.smax = true, umin, umax, smin, smax
		return
	}
	h.umin, h.umax = min(h.umin, umin), max(h.umax, umax)
	h.smin, h.smax = min(h.smin, smin), max(h.smax, smax)
}

func (h arcHull) meet(o arcHull) arcHull {
	if !h.ok || !o.ok {
		return arcHull{w: h.w}
	}
	h.umin, h.umax = max(h.umin, o.umin), min(h.umax, o.umax)
	h.smin, h.smax = max(h.smin, o.smin), min(h.smax, o.smax)
	h.ok = h.umin <= h.umax && h.smin <= h.smax
	return h
}

func (h arcHull) view(t Tnum) view {
	if !h.ok {
		return emptyView()
	}
	return view{t: t, umin: h.umin, umax: h.umax, smin: h.smin, smax: h.smax}
}

// truncTnum confines t to w bits.
func truncTnum(t Tnum, w uint) Tnum {
	m := widthMask(w)
	return Tnum{t.Value & m, t.Mask & m}
}

// binW computes add, sub, mul, and, or or xor at width w. Both operands are
// split into their sign-half pieces, in which unsigned and signed orders
// agree, and each pair of pieces gives an exact arc or interval.
func binW(op uint8, a, b view, w uint) view {
	if a.empty() || b.empty() {
		return emptyView()
	}
	pa, na := a.pieces(w)
	pb, nb := b.pieces(w)
	h := newHull(w)
	top := uint64(1) << (w - 1)
	var t Tnum
	switch op {
	case isa.ALUAdd:
		t = a.t.Add(b.t)
	case isa.ALUSub:
		t = a.t.Sub(b.t)
	case isa.ALUMul:
		t = a.t.Mul(b.t)
	case isa.ALUAnd:
		t = a.t.And(b.t)
	case isa.ALUOr:
		t = a.t.Or(b.t)
	case isa.ALUXor:
		t = a.t.Xor(b.t)
	}
	for _, x := range pa[:na] {
		for _, y := range pb[:nb] {
			// Pieces are inside a sign half, so the sizes add up to
			// less than 2^w without overflowing.
			size := (x.hi - x.lo) + (y.hi - y.lo)
			switch op {
			case isa.ALUAdd:
				h.addArc(x.lo+y.lo, size)
			case isa.ALUSub:
				h.addArc(x.lo-y.hi, size)
			case isa.ALUMul:
				mulPieces(&h, x, y, w)
			case isa.ALUAnd:
				lo := minAnd(x.lo, x.hi, y.lo, y.hi, top)
				h.addArc(lo, maxAnd(x.lo, x.hi, y.lo, y.hi, top)-lo)
			case isa.ALUOr:
				lo := minOr(x.lo, x.hi, y.lo, y.hi, top)
				h.addArc(lo, maxOr(x.lo, x.hi, y.lo, y.hi, top)-lo)
			case isa.ALUXor:
				lo := minXor(x.lo, x.hi, y.lo, y.hi, top)
				h.addArc(lo, maxXor(x.lo, x.hi, y.lo, y.hi, top)-lo)
			}
		}
	}
	return h.view(truncTnum(t, w))
}

// magnitudes returns the absolute values of the piece p of width w, which
// lies in one sign half, and whether it is the negative half.
func magnitudes(p span, w uint) (lo, hi uint64, neg bool) {
	if p.lo>>(w-1) == 0 {
		return p.lo, p.hi, false
	}
	mask := widthMask(w)
	return -p.hi & mask, -p.lo & mask, true
}

// mulPieces adds the products of two pieces: their magnitudes multiply
// monotonically, and the exact 128-bit products give an arc unless they
// span 2^w values or more.
func mulPieces(h *arcHull, x, y span, w uint) {
	xlo, xhi, xneg := magnitudes(x, w)
	ylo, yhi, yneg := magnitudes(y, w)
	loHi, loLo := bits.Mul64(xlo, ylo)
	hiHi, hiLo := bits.Mul64(xhi, yhi)
	sizeLo, borrow := bits.Sub64(hiLo, loLo, 0)
	sizeHi, _ := bits.Sub64(hiHi, loHi, borrow)
	if sizeHi != 0 {
		h.addArc(0, math.MaxUint64)
		return
	}
	if xneg != yneg {
		h.addArc(-hiLo, sizeLo)
	} else {
		h.addArc(loLo, sizeLo)
	}
}

// shift applies a shift by src, a constant or a set of amounts.
func (s *Scalar) shift(op uint8, src Scalar, is64 bool) {
	w := uint(32)
	sv := src.view32()
	if is64 {
		w, sv = 64, src.view64()
	}
	if sv.empty() || !s.Valid() {
		*s = emptyScalar()
		return
	}
	// The runtime masks the amount; amounts already below the width keep
	// their bounds.
	t, lo, hi := sv.t, sv.umin, sv.umax
	if hi >= uint64(w) {
		t, lo, hi = sv.t.And(TnumConst(uint64(w-1))), 0, uint64(w-1)
	}
	r, r32 := emptyView(), emptyView()
	for k, ok := t.next(lo); ok && k <= hi; k, ok = t.next(k + 1) {
		if !is64 {
			r = r.join(shiftW(op, s.view32(), uint(k), 32))
			continue
		}
		r64 := shiftW(op, s.view64(), uint(k), 64)
		// The low half of a left shift depends only on the low half,
		// and a left shift by 32 or more only on the low half too (the
		// compilers' <<32 s>>32 sign extension); right shifts bring in
		// high bits, left to Sync.
		switch {
		case op != isa.ALULsh:
			r32 = r32.join(Unknown().view32())
		case k < 32:
			r32 = r32.join(shiftW(op, s.view32(), uint(k), 32))
		default:
			r32 = r32.join(constView(0, 32))
			ps, n := s.view32().pieces(32)
			low := lshPieces(ps[:n], uint(k), 64)
			r64 = r64.meet(low.view(s.Var.Subreg().Lsh(uint8(k))))
		}
		r = r.join(r64)
	}
	if is64 {
		*s = fromView64(r, &r32)
	} else {
		*s = fromView32(r)
	}
}

// shiftW shifts a by the constant k < w at width w.
func shiftW(op uint8, a view, k uint, w uint) view {
	ps, n := a.pieces(w)
	h := newHull(w)
	var t Tnum
	if op == isa.ALULsh {
		h = lshPieces(ps[:n], k, w)
	}
	for _, p := range ps[:n] {
		switch op {
		case isa.ALURsh:
			h.addArc(p.lo>>k, p.hi>>k-p.lo>>k)
		case isa.ALUArsh:
			lo, hi := sext(p.lo, w)>>k, sext(p.hi, w)>>k
			h.addArc(uint64(lo), uint64(hi-lo))
		}
	}
	switch op {
	case isa.ALULsh:
		t = truncTnum(a.t.Lsh(uint8(k)), w)
	case isa.ALURsh:
		t = a.t.Rsh(uint8(k))
	case isa.ALUArsh:
		t = a.t.Arsh(uint8(k), uint8(w))
	}
	return h.view(t)
}

// lshPieces returns the hull of the values of the pieces ps shifted left by
// k at width w: each piece gives an arc unless it spans too many values.
func lshPieces(ps []span, k, w uint) arcHull {
	h := newHull(w)
	mask := widthMask(w)
	for _, p := range ps {
		size := p.hi - p.lo
		if size > mask>>k {
			h.addArc(0, mask)
			continue
		}
		h.addArc(p.lo<<k, size<<k)
	}
	return h
}

// divMod applies udiv, sdiv, umod or smod by src.
func (s *Scalar) divMod(op uint8, src Scalar, is64, signed bool) {
	w := uint(32)
	d := s.view32()
	if is64 {
		w, d = 64, s.view64()
	}
	// Split the divisor into zero, handled by the runtime's rule, and the
	// rest, made exact by Sync.
	nz := src
	var hasZero bool
	if is64 {
		hasZero = src.Umin == 0
		nz.Umin = max(nz.Umin, 1)
	} else {
		hasZero = src.U32min == 0
		nz.U32min = max(nz.U32min, 1)
	}
	nz.Sync()
	r := emptyView()
	if nz.Valid() && !d.empty() {
		q := nz.view32()
		if is64 {
			q = nz.view64()
		}
		r = divModW(op, d, q, w, signed)
	}
	if hasZero && src.Valid() {
		if op == isa.ALUDiv {
			r = r.join(constView(0, w))
		} else {
			r = r.join(d)
		}
	}
	if is64 {
		*s = fromView64(r, nil)
	} else {
		*s = fromView32(r)
	}
}

// divModW divides d by q, which does not hold zero, at width w. Within a
// pair of sign-half pieces the quotient's magnitude grows with the
// dividend's and shrinks with the divisor's, so the corners bound it; the
// remainder's magnitude is below both the dividend's and the divisor's.
// Magnitudes are unsigned, so INT_MIN / -1 comes out as the pattern of
// INT_MIN, as the runtime gives.
func divModW(op uint8, d, q view, w uint, signed bool) view {
	pd, nd := d.pieces(w)
	pq, nq := q.pieces(w)
	h := newHull(w)
	identity := true
	for _, x := range pd[:nd] {
		for _, y := range pq[:nq] {
			xlo, xhi, xneg := x.lo, x.hi, false
			ylo, yhi, yneg := y.lo, y.hi, false
			if signed {
				xlo, xhi, xneg = magnitudes(x, w)
				ylo, yhi, yneg = magnitudes(y, w)
			}
			if op == isa.ALUDiv {
				identity = false
				h.addMagnitudes(xlo/yhi, xhi/ylo, xneg != yneg)
				continue
			}
			lo, hi := xlo, xhi
			switch {
			case xhi < ylo:
				// Every dividend is below every divisor.
			case ylo == yhi && xlo/ylo == xhi/ylo:
				identity = false
				lo, hi = xlo%ylo, xhi%ylo
			default:
				identity = false
				lo, hi = 0, min(xhi, yhi-1)
			}
			h.addMagnitudes(lo, hi, xneg)
		}
	}
	if identity && op == isa.ALUMod {
		return d
	}
	t := Tnum{Mask: widthMask(w)}
	if !signed && q.t.IsConst() && q.umin == q.umax && q.umin&(q.umin-1) == 0 {
		// Unsigned division and modulo by a power of two are shifts and
		// masks.
		if op == isa.ALUDiv {
			t = d.t.Rsh(uint8(bits.TrailingZeros64(q.umin)))
		} else {
			t = d.t.And(TnumConst(q.umin - 1))
		}
	}
	return h.view(t)
}

// The exact bounds of x op y for x in [a, b] and y in [c, d], unsigned, from
// Hacker's Delight (section 4-3). top is the highest bit of the width.

func minOr(a, b, c, d, top uint64) uint64 {
	for m := top; m != 0; m >>= 1 {
		if ^a&c&m != 0 {
			if t := (a | m) &^ (m - 1); t <= b {
				a = t
				break
			}
		} else if a&^c&m != 0 {
			if t := (c | m) &^ (m - 1); t <= d {
				c = t
				break
			}
		}
	}
	return a | c
}

func maxOr(a, b, c, d, top uint64) uint64 {
	for m := top; m != 0; m >>= 1 {
		if b&d&m != 0 {
			if t := (b - m) | (m - 1); t >= a {
				b = t
				break
			}
			if t := (d - m) | (m - 1); t >= c {
				d = t
				break
			}
		}
	}
	return b | d
}

func minAnd(a, b, c, d, top uint64) uint64 {
	for m := top; m != 0; m >>= 1 {
		if ^a&^c&m != 0 {
			if t := (a | m) &^ (m - 1); t <= b {
				a = t
				break
			}
			if t := (c | m) &^ (m - 1); t <= d {
				c = t
				break
			}
		}
	}
	return a & c
}

func maxAnd(a, b, c, d, top uint64) uint64 {
	for m := top; m != 0; m >>= 1 {
		if b&^d&m != 0 {
			if t := b&^m | (m - 1); t >= a {
				b = t
				break
			}
		} else if ^b&d&m != 0 {
			if t := d&^m | (m - 1); t >= c {
				d = t
				break
			}
		}
	}
	return b & d
}

func minXor(a, b, c, d, top uint64) uint64 {
	for m := top; m != 0; m >>= 1 {
		if ^a&c&m != 0 {
			if t := (a | m) &^ (m - 1); t <= b {
				a = t
			}
		} else if a&^c&m != 0 {
			if t := (c | m) &^ (m - 1); t <= d {
				c = t
			}
		}
	}
	return a ^ c
}

func maxXor(a, b, c, d, top uint64) uint64 {
	for m := top; m != 0; m >>= 1 {
		if b&d&m != 0 {
			if t := (b - m) | (m - 1); t >= a {
				b = t
			} else if t := (d - m) | (m - 1); t >= c {
				d = t
			}
		}
	}
	return b ^ d
}
