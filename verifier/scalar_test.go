package verifier

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// interesting returns a value near the edges the domain cares about: zero,
// the 32-bit and 64-bit sign and width boundaries, or anywhere.
func interesting(r *rand.Rand) uint64 {
	small := r.Uint64N(20)
	switch r.IntN(10) {
	case 0:
		return small
	case 1:
		return -small
	case 2:
		return 1<<31 + small - 10
	case 3:
		return 1<<32 + small - 10
	case 4:
		return 1<<63 + small - 10
	case 5:
		return uint64(r.Uint32())
	case 6:
		return r.Uint64N(1 << 16)
	case 7:
		return r.Uint64() & (1<<r.IntN(64) - 1)
	case 8:
		return uint64(int64(int32(r.Uint32())))
	}
	return r.Uint64()
}

// seedSet returns one to four values, often close together.
func seedSet(r *rand.Rand) []uint64 {
	vs := []uint64{interesting(r)}
	for n := r.IntN(4); n > 0; n-- {
		switch r.IntN(3) {
		case 0:
			vs = append(vs, interesting(r))
		case 1:
			vs = append(vs, vs[0]+r.Uint64N(300)-150)
		default:
			vs = append(vs, vs[0]^1<<r.IntN(64))
		}
	}
	return vs
}

// abstract returns a synced scalar holding every value of vs, built in one
// of several styles chosen by style: from one kind of constraint only or
// from all of them.
func abstract(vs []uint64, style uint8) Scalar {
	t := TnumConst(vs[0])
	umin, umax := vs[0], vs[0]
	smin, smax := int64(vs[0]), int64(vs[0])
	u32min, u32max := uint32(vs[0]), uint32(vs[0])
	s32min, s32max := int32(vs[0]), int32(vs[0])
	for _, v := range vs[1:] {
		t = t.Union(TnumConst(v))
		umin, umax = min(umin, v), max(umax, v)
		smin, smax = min(smin, int64(v)), max(smax, int64(v))
		u32min, u32max = min(u32min, uint32(v)), max(u32max, uint32(v))
		s32min, s32max = min(s32min, int32(v)), max(s32max, int32(v))
	}
	s := Unknown()
	switch style % 8 {
	case 0:
		return Const(vs[0])
	case 1:
		s.Umin, s.Umax = umin, umax
	case 2:
		s.Smin, s.Smax = smin, smax
	case 3:
		s.Var = t
	case 4:
		s.U32min, s.U32max, s.S32min, s.S32max = u32min, u32max, s32min, s32max
	case 5:
		s.Var, s.Umin, s.Umax = t, umin, umax
	case 6:
		s.Var, s.Smin, s.Smax, s.U32min, s.U32max = t, smin, smax, u32min, u32max
	default:
		s = Scalar{t, smin, smax, umin, umax, s32min, s32max, u32min, u32max}
	}
	s.Sync()
	return s
}

// members returns values of s: the seeds it was built from, its bounds
// (attained, as s is exact) and random samples.
func members(r *rand.Rand, s Scalar, seeds []uint64) []uint64 {
	out := slices.Clone(seeds)
	for _, v := range seeds {
		if !s.Contains(v) {
			panic("abstraction lost a seed")
		}
	}
	for _, v := range []uint64{s.Umin, s.Umax, uint64(s.Smin), uint64(s.Smax), s.Var.Value, s.Var.Value | s.Var.Mask} {
		if s.Contains(v) {
			out = append(out, v)
		}
	}
	for range 6 {
		v := s.Var.Value | r.Uint64()&s.Var.Mask
		if r.IntN(2) == 0 {
			// Somewhere in the unsigned range, moved onto the tnum.
			x := s.Umin
			if s.Umax > s.Umin {
				x += r.Uint64N(s.Umax - s.Umin)
			}
			if n, ok := s.Var.next(x); ok {
				v = n
			}
		}
		if s.Contains(v) {
			out = append(out, v)
		}
	}
	return out
}

// randScalar returns a random synced scalar and some of its values.
func randScalar(r *rand.Rand) (Scalar, []uint64) {
	seeds := seedSet(r)
	style := uint8(r.IntN(8))
	if style == 0 {
		seeds = seeds[:1]
	}
	s := abstract(seeds, style)
	return s, members(r, s, seeds)
}

// refALU is the runtime's ALU (RFC 9669), written independently of the
// abstract domain.
func refALU(op uint8, dst, src uint64, is64, signed bool) uint64 {
	if !is64 {
		d, s := uint32(dst), uint32(src)
		var r uint32
		switch op {
		case 0x00:
			r = d + s
		case 0x10:
			r = d - s
		case 0x20:
			r = d * s
		case 0x30:
			switch {
			case s == 0:
				r = 0
			case signed:
				r = uint32(int32(d) / int32(s))
			default:
				r = d / s
			}
		case 0x40:
			r = d | s
		case 0x50:
			r = d & s
		case 0x60:
			r = d << (s & 31)
		case 0x70:
			r = d >> (s & 31)
		case 0x80:
			r = -d
		case 0x90:
			switch {
			case s == 0:
				r = d
			case signed:
				r = uint32(int32(d) % int32(s))
			default:
				r = d % s
			}
		case 0xa0:
			r = d ^ s
		case 0xc0:
			r = uint32(int32(d) >> (s & 31))
		}
		return uint64(r)
	}
	d, s := dst, src
	switch op {
	case 0x00:
		return d + s
	case 0x10:
		return d - s
	case 0x20:
		return d * s
	case 0x30:
		switch {
		case s == 0:
			return 0
		case signed:
			return uint64(int64(d) / int64(s))
		}
		return d / s
	case 0x40:
		return d | s
	case 0x50:
		return d & s
	case 0x60:
		return d << (s & 63)
	case 0x70:
		return d >> (s & 63)
	case 0x80:
		return -d
	case 0x90:
		switch {
		case s == 0:
			return d
		case signed:
			return uint64(int64(d) % int64(s))
		}
		return d % s
	case 0xa0:
		return d ^ s
	case 0xc0:
		return uint64(int64(d) >> (s & 63))
	}
	panic("bad op")
}

// exactOf returns the exact scalar of a non-empty finite set: the hulls in
// every order and width and the union of the members' tnums, computed
// directly from the members without Sync.
func exactOf(vs []uint64) Scalar {
	s := Const(vs[0])
	for _, v := range vs[1:] {
		s.Var = s.Var.Union(TnumConst(v))
		s.Umin, s.Umax = min(s.Umin, v), max(s.Umax, v)
		s.Smin, s.Smax = min(s.Smin, int64(v)), max(s.Smax, int64(v))
		s.U32min, s.U32max = min(s.U32min, uint32(v)), max(s.U32max, uint32(v))
		s.S32min, s.S32max = min(s.S32min, int32(v)), max(s.S32max, int32(v))
	}
	return s
}

// enumerable returns a scalar whose tnum has at most ten unknown bits, at
// random positions, and random bounds, with all its values listed by brute
// force.
func enumerable(r *rand.Rand) (Scalar, []uint64) {
	var mask uint64
	for n := r.IntN(11); n > 0; n-- {
		mask |= 1 << r.IntN(64)
	}
	if r.IntN(3) == 0 {
		// Unknown bits around the 32-bit and 64-bit sign bits.
		mask = uint64(r.Uint32()>>22)<<r.IntN(54) | mask&0xff
	}
	t := Tnum{Value: r.Uint64() &^ mask, Mask: mask}
	all := []uint64{}
	for sub := uint64(0); ; sub = (sub - mask) & mask {
		all = append(all, t.Value|sub)
		if sub == mask {
			break
		}
	}
	pick := func() uint64 {
		if r.IntN(2) == 0 {
			return all[r.IntN(len(all))]
		}
		return interesting(r)
	}
	s := Unknown()
	s.Var = t
	if r.IntN(2) == 0 {
		a, b := pick(), pick()
		s.Umin, s.Umax = min(a, b), max(a, b)
	}
	if r.IntN(2) == 0 {
		a, b := int64(pick()), int64(pick())
		s.Smin, s.Smax = min(a, b), max(a, b)
	}
	if r.IntN(2) == 0 {
		a, b := uint32(pick()), uint32(pick())
		s.U32min, s.U32max = min(a, b), max(a, b)
	}
	if r.IntN(2) == 0 {
		a, b := int32(pick()), int32(pick())
		s.S32min, s.S32max = min(a, b), max(a, b)
	}
	var in []uint64
	for _, v := range all {
		if s.Contains(v) {
			in = append(in, v)
		}
	}
	return s, in
}

// TestSyncExact checks Sync against brute force: on scalars small enough to
// enumerate, every bound and the tnum must be exactly those of the values
// the unsynced scalar holds, and Sync must be idempotent.
func TestSyncExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	empty := 0
	for i := range 40000 {
		s, in := enumerable(r)
		got := s
		got.Sync()
		if len(in) == 0 {
			empty++
			if got.Valid() || s.Valid() {
				t.Fatalf("%d: %+v holds nothing but synced to valid %+v", i, s, got)
			}
			continue
		}
		if !s.Valid() {
			t.Fatalf("%d: %+v holds %d values but is not valid", i, s, len(in))
		}
		if want := exactOf(in); got != want {
			t.Fatalf("%d: Sync(%+v)\n got %+v\nwant %+v", i, s, got, want)
		}
		again := got
		again.Sync()
		if again != got {
			t.Fatalf("%d: Sync not idempotent: %+v then %+v", i, got, again)
		}
		for _, v := range in {
			if !got.Contains(v) {
				t.Fatalf("%d: synced %+v lost %#x", i, got, v)
			}
		}
	}
	if empty == 0 {
		t.Fatal("no empty scalar generated")
	}
}

// TestSyncKernelCases checks deductions the kernel's selftests rely on.
func TestSyncKernelCases(t *testing.T) {
	tests := []struct {
		name string
		in   Scalar
		want string
	}{
		{
			// verifier_bounds.c "bounds deduction cross sign boundary,
			// positive overlap": s64 [-128, 127] and u64 <= 2^64-257.
			name: "cross sign positive overlap",
			in:   func() Scalar { s := SRange(-128, 127); s.Umax = 0xffffffffffffff00; return s }(),
			want: "scalar(smin=smin32=0,smax=umax=smax32=umax32=127,var_off=(0x0; 0x7f))",
		},
		{
			// Same, two overlaps: the kernel learns nothing more; exact
			// Sync also bounds the low half's unsigned maximum.
			name: "cross sign two overlaps",
			in:   func() Scalar { s := SRange(-128, 127); s.Umax = 0xffffffffffffff80; return s }(),
			want: "scalar(smin=smin32=-128,smax=smax32=127,umax=0xffffffffffffff80,umax32=0xffffff80)",
		},
		{
			name: "32-bit bounds into 64",
			in:   func() Scalar { s := URange(0, 0xffffffff); s.S32min, s.S32max = 0, 100; return s }(),
			want: "scalar(smin=smin32=0,smax=umax=smax32=umax32=100,var_off=(0x0; 0x7f))",
		},
		{
			name: "tnum into bounds",
			in:   FromTnum(Tnum{Value: 0x80, Mask: 0x0f}),
			want: "scalar(smin=umin=smin32=umin32=128,smax=umax=smax32=umax32=143,var_off=(0x80; 0xf))",
		},
		{
			name: "range into tnum",
			in:   URange(0, 255),
			want: "scalar(smin=smin32=0,smax=umax=smax32=umax32=255,var_off=(0x0; 0xff))",
		},
		{
			name: "bounds agreeing on a constant",
			in:   func() Scalar { s := URange(5, 10); s.Smax = 5; return s }(),
			want: "5",
		},
		{
			name: "negative 64-bit range",
			in:   SRange(-10, -1),
			want: "scalar(smin=smin32=-10,smax=smax32=-1,umin=0xfffffffffffffff6,umin32=0xfffffff6,var_off=(0xfffffffffffffff0; 0xf))",
		},
	}
	for _, tt := range tests {
		s := tt.in
		s.Sync()
		if got := s.String(); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestScalarString checks the log format against lines of kernel verifier
// logs, with the scalars written as the kernel had them (not always synced
// the way ours would be).
func TestScalarString(t *testing.T) {
	full := Unknown()
	with := func(f func(*Scalar)) Scalar {
		s := Unknown()
		f(&s)
		return s
	}
	tests := []struct {
		s    Scalar
		want string
	}{
		{Const(5), "5"},
		{Const(0), "0"},
		{Const(math.MaxUint64), "-1"},
		{Const(0x7fff), "32767"},
		{Const(0x8000), "0x8000"},
		{Const(0xffffffff), "0xffffffff"},
		{Const(uint64(0xffffffffffff0000)), "0xffffffffffff0000"},
		{Const(uint64(0xffffffffffff8000)), "-32768"},
		{full, "scalar()"},
		// r0 = *(u8 *)(r1 +0)
		{URange(0, 255), "scalar(smin=smin32=0,smax=umax=smax32=umax32=255,var_off=(0x0; 0xff))"},
		// r0 &= 0xffffff
		{URange(0, 0xffffff), "scalar(smin=smin32=0,smax=umax=smax32=umax32=0xffffff,var_off=(0x0; 0xffffff))"},
		// r3 &= 15; r3 |= 128
		{FromTnum(Tnum{0x80, 0xf}), "scalar(smin=umin=smin32=umin32=128,smax=umax=smax32=umax32=143,var_off=(0x80; 0xf))"},
		// verifier_bounds.c: bounds deduction cross sign boundary,
		// negative overlap (as the kernel left it).
		{Scalar{
			Var:  Tnum{0xfffffffffffffc00, 0x3ff},
			Smin: -655, Smax: -146,
			Umin: 0xfffffffffffffd71, Umax: 0xffffffffffffff6e,
			S32min: -783, S32max: -146,
			U32min: 0xfffffcf1, U32max: 0xffffff6e,
		}, "scalar(smin=-655,smax=smax32=-146,umin=0xfffffffffffffd71,umax=0xffffffffffffff6e,smin32=-783,umin32=0xfffffcf1,umax32=0xffffff6e,var_off=(0xfffffffffffffc00; 0x3ff))"},
		// Same, two overlaps.
		{with(func(s *Scalar) {
			s.Smin, s.Smax, s.S32min, s.S32max, s.Umax = -128, 127, -128, 127, 0xffffffffffffff80
		}), "scalar(smin=smin32=-128,smax=smax32=127,umax=0xffffffffffffff80)"},
		// Hex signed 32-bit bounds print as 32-bit patterns and do not
		// merge with the 64-bit ones.
		{with(func(s *Scalar) { s.Smin, s.S32min = -70000, -70000 }),
			"scalar(smin=0xfffffffffffeee90,smin32=0xfffeee90)"},
		{with(func(s *Scalar) { s.Umin, s.U32min = 2401, 2401; s.Umax = 0xffffff }),
			"scalar(umin=umin32=2401,umax=0xffffff)"},
		// A negative signed bound never merges with an unsigned one.
		{with(func(s *Scalar) { s.Smax, s.Umax = -2, 0xfffffffffffffffe }),
			"scalar(smax=-2,umax=0xfffffffffffffffe)"},
		{with(func(s *Scalar) { s.Var = Tnum{0, 0xfffffffffffffff0} }),
			"scalar(var_off=(0x0; 0xfffffffffffffff0))"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%+v:\n got %s\nwant %s", tt.s, got, tt.want)
		}
	}
}

// TestScalarIn checks In against membership on random pairs.
func TestScalarIn(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		a, am := randScalar(r)
		b, _ := randScalar(r)
		if r.IntN(3) == 0 {
			// Often compare with a widening of a.
			b = a
			b.Umax = max(b.Umax, interesting(r))
			b.Var = b.Var.Union(TnumConst(interesting(r)))
			b.Sync()
		}
		if a.In(b) {
			for _, v := range am {
				if !b.Contains(v) {
					t.Fatalf("%v in %v, but %#x is not", a, b, v)
				}
			}
		}
		if !a.In(a) {
			t.Fatalf("%v not in itself", a)
		}
		if !a.In(Unknown()) {
			t.Fatalf("%v not in unknown", a)
		}
	}
	if !URange(0, 10).In(URange(0, 20)) || URange(0, 20).In(URange(0, 10)) {
		t.Fatal("range containment")
	}
	if !emptyScalar().In(Const(1)) {
		t.Fatal("empty is in everything")
	}
}

// TestScalarConstructors checks that the constructors hold what they say.
func TestScalarConstructors(t *testing.T) {
	if s := Const32(0xfffffffe); !s.IsConst() || s.Const() != 0xfffffffe {
		t.Fatalf("Const32: %v", s)
	}
	if !Const(7).Valid() || !Unknown().Valid() || emptyScalar().Valid() {
		t.Fatal("Valid")
	}
	if Unknown().IsConst() || !Unknown().IsUnknown() || URange(0, 1).IsUnknown() {
		t.Fatal("IsConst/IsUnknown")
	}
	for _, s := range []Scalar{Const(3), Unknown(), URange(5, 9), SRange(-4, 4), FromTnum(Tnum{0x10, 0x3})} {
		again := s
		again.Sync()
		if again != s {
			t.Fatalf("%v not synced: %v", s, again)
		}
	}
	if s := SRange(-4, 4); !s.Contains(uint64(math.MaxUint64)) || s.Contains(5) {
		t.Fatalf("SRange: %v", s)
	}
}

// BenchmarkSync measures the exact reduction on a typical mixed scalar.
func BenchmarkSync(b *testing.B) {
	s := Scalar{Var: Tnum{0, 0xfffffff0}, Smin: -5, Smax: 1 << 40, Umin: 3, Umax: math.MaxUint64,
		S32min: math.MinInt32, S32max: math.MaxInt32, U32min: 0, U32max: 1 << 30}
	for b.Loop() {
		x := s
		x.Sync()
	}
}
