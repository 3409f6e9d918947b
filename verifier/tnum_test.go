package verifier

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

func TestTnumTable(t *testing.T) {
	tests := []struct {
		name      string
		got, want Tnum
	}{
		{"range const", TnumRange(5, 5), TnumConst(5)},
		{"range byte", TnumRange(0, 255), Tnum{0, 0xff}},
		{"range 4..7", TnumRange(4, 7), Tnum{4, 3}},
		{"range 3..4", TnumRange(3, 4), Tnum{0, 7}},
		{"range full", TnumRange(0, 1<<63), TnumUnknown()},
		{"range high", TnumRange(0x1000, 0x10ff), Tnum{0x1000, 0xff}},
		{"add consts", TnumConst(3).Add(TnumConst(4)), TnumConst(7)},
		{"add carry", Tnum{0, 1}.Add(TnumConst(1)), Tnum{0, 3}},
		{"add aligned", Tnum{0, 0xf0}.Add(TnumConst(3)), Tnum{3, 0xf0}},
		{"add carries", Tnum{0, 0xf0}.Add(TnumConst(0x10)), Tnum{0, 0x1f0}},
		{"sub consts", TnumConst(3).Sub(TnumConst(4)), TnumConst(^uint64(0))},
		{"neg", TnumConst(1).Neg(), TnumConst(^uint64(0))},
		{"mul consts", TnumConst(6).Mul(TnumConst(7)), TnumConst(42)},
		{"mul by 4", Tnum{0, 3}.Mul(TnumConst(4)), Tnum{0, 0xc}},
		{"mul by 0", TnumUnknown().Mul(TnumConst(0)), TnumConst(0)},
		{"and mask", TnumUnknown().And(TnumConst(0xff)), Tnum{0, 0xff}},
		{"or bit", Tnum{0, 0xf}.Or(TnumConst(0x80)), Tnum{0x80, 0xf}},
		{"xor", Tnum{1, 2}.Xor(TnumConst(3)), Tnum{0, 2}},
		{"lsh", Tnum{1, 2}.Lsh(4), Tnum{0x10, 0x20}},
		{"rsh", Tnum{0x10, 0x20}.Rsh(4), Tnum{1, 2}},
		{"arsh64 neg", TnumConst(1<<63).Arsh(60, 64), TnumConst(^uint64(7))},
		{"arsh64 unknown sign", Tnum{0, 1 << 63}.Arsh(62, 64), Tnum{0, ^uint64(1)}},
		{"arsh32 neg", TnumConst(0x80000000).Arsh(28, 32), TnumConst(0xfffffff8)},
		{"arsh32 ignores high", TnumConst(0xffffffff_00000010).Arsh(4, 32), TnumConst(1)},
		{"intersect", Tnum{0, 0xff}.Intersect(Tnum{0x10, 0x0f}), Tnum{0x10, 0x0f}},
		{"union", TnumConst(4).Union(TnumConst(5)), Tnum{4, 1}},
		{"union far", TnumConst(0).Union(TnumConst(1 << 63)), Tnum{0, 1 << 63}},
		{"cast", TnumUnknown().Cast(2), Tnum{0, 0xffff}},
		{"cast 8", TnumUnknown().Cast(8), TnumUnknown()},
		{"subreg", Tnum{0x1_00000001, 0xf0}.Subreg(), Tnum{1, 0xf0}},
		{"clear subreg", Tnum{0x1_00000001, 0x1_000000f0}.ClearSubreg(), Tnum{0x1_00000000, 0x1_00000000}},
		{"const subreg", TnumUnknown().ConstSubreg(7), Tnum{7, 0xffffffff_00000000}},
		{"with subreg", Tnum{0x5_00000000, 0}.WithSubreg(Tnum{0, 0xff}), Tnum{0x5_00000000, 0xff}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestTnumPredicates(t *testing.T) {
	if !TnumConst(3).IsConst() || TnumUnknown().IsConst() || !TnumUnknown().IsUnknown() {
		t.Error("IsConst/IsUnknown")
	}
	if !TnumConst(5).In(Tnum{4, 1}) || (Tnum{4, 1}).In(TnumConst(5)) || TnumConst(6).In(Tnum{4, 1}) {
		t.Error("In")
	}
	if !(Tnum{4, 1}).In(TnumUnknown()) || TnumUnknown().In(Tnum{4, 1}) {
		t.Error("In unknown")
	}
	if !(Tnum{0x10, 0xf}).Contains(0x1f) || (Tnum{0x10, 0xf}).Contains(0x20) {
		t.Error("Contains")
	}
	if (Tnum{1, 0}).Overlaps(Tnum{2, 0}) || !(Tnum{1, 2}).Overlaps(Tnum{3, 0}) {
		t.Error("Overlaps")
	}
	if !(Tnum{8, 0xf0}).IsAligned(8) || (Tnum{8, 0xf0}).IsAligned(16) || !(Tnum{1, 0}).IsAligned(0) {
		t.Error("IsAligned")
	}
	if !(Tnum{0, 0xffffffff_00000000}).SubregIsConst() || (Tnum{0, 1}).SubregIsConst() {
		t.Error("SubregIsConst")
	}
	if !TnumConst(1).Equals(TnumConst(1)) || TnumConst(1).Equals(Tnum{1, 2}) {
		t.Error("Equals")
	}
}

func TestTnumString(t *testing.T) {
	tests := []struct {
		t    Tnum
		want string
	}{
		{Tnum{0, 0xff}, "(0x0; 0xff)"},
		{Tnum{0x80, 0xf}, "(0x80; 0xf)"},
		{Tnum{0xfffffffffffffc00, 0x3ff}, "(0xfffffffffffffc00; 0x3ff)"},
		{TnumUnknown(), "(0x0; 0xffffffffffffffff)"},
		{TnumConst(5), "5"},
		{TnumConst(0x10000), "0x10000"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("%#v: got %s, want %s", tt.t, got, tt.want)
		}
	}
}

// randTnum returns a well-formed tnum, often with few unknown bits.
func randTnum(r *rand.Rand) Tnum {
	var mask uint64
	switch r.IntN(4) {
	case 0:
		mask = r.Uint64()
	case 1:
		mask = r.Uint64() & r.Uint64() & r.Uint64()
	case 2:
		mask = uint64(1)<<r.IntN(64) - 1
	}
	return Tnum{Value: interesting(r) &^ mask, Mask: mask}
}

// member returns a random value of t.
func member(r *rand.Rand, t Tnum) uint64 { return t.Value | r.Uint64()&t.Mask }

// TestTnumSound checks every tnum operation on random members.
func TestTnumSound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 100000 {
		a, b := randTnum(r), randTnum(r)
		x, y := member(r, a), member(r, b)
		k := uint8(r.IntN(64))
		check := func(name string, res Tnum, v uint64) {
			t.Helper()
			if res.Value&res.Mask != 0 {
				t.Fatalf("%d: %s(%v, %v) = %v is malformed", i, name, a, b, res)
			}
			if !res.Contains(v) {
				t.Fatalf("%d: %s(%v, %v) = %v misses %#x (x=%#x y=%#x)", i, name, a, b, res, v, x, y)
			}
		}
		check("add", a.Add(b), x+y)
		check("sub", a.Sub(b), x-y)
		check("mul", a.Mul(b), x*y)
		check("and", a.And(b), x&y)
		check("or", a.Or(b), x|y)
		check("xor", a.Xor(b), x^y)
		check("neg", a.Neg(), -x)
		check("lsh", a.Lsh(k), x<<k)
		check("rsh", a.Rsh(k), x>>k)
		check("arsh", a.Arsh(k, 64), uint64(int64(x)>>k))
		check("arsh32", a.Arsh(k%32, 32), uint64(uint32(int32(x)>>(k%32))))
		check("union", a.Union(b), x)
		check("union", a.Union(b), y)
		check("subreg", a.Subreg(), uint64(uint32(x)))
		check("with subreg", a.WithSubreg(b), x&^0xffffffff|uint64(uint32(y)))
		if a.Overlaps(b) {
			z := a.Value | b.Value | member(r, Tnum{0, a.Mask & b.Mask})
			if !a.Contains(z) || !b.Contains(z) {
				t.Fatalf("%d: built %#x not in %v and %v", i, z, a, b)
			}
			check("intersect", a.Intersect(b), z)
		} else if a.Contains(y) {
			t.Fatalf("%d: %v and %v do not overlap but share %#x", i, a, b, y)
		}
		if a.In(b) && !b.Contains(x) {
			t.Fatalf("%d: %v in %v but %#x is not", i, a, b, x)
		}
		lo, hi := min(x, y), max(x, y)
		rg := TnumRange(lo, hi)
		check("range", rg, lo)
		check("range", rg, hi)
		check("range", rg, lo+(hi-lo)/2)
	}
}

// TestTnumCastSound covers Cast separately: sizes 1, 2, 4 and 8.
func TestTnumCastSound(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 10000 {
		a := randTnum(r)
		x := member(r, a)
		for _, size := range []uint8{1, 2, 4, 8} {
			want := x
			if size < 8 {
				want &= 1<<(size*8) - 1
			}
			if !a.Cast(size).Contains(want) {
				t.Fatalf("Cast(%v, %d) misses %#x", a, size, want)
			}
		}
	}
}

// TestTnumNextPrev checks the ordered neighbour search against brute force
// on 8-bit tnums.
func TestTnumNextPrev(t *testing.T) {
	for mask := uint64(0); mask < 256; mask++ {
		for value := uint64(0); value < 256; value += 7 {
			tn := Tnum{Value: value &^ mask, Mask: mask}
			for n := uint64(0); n < 256; n++ {
				next, prev := uint64(0), uint64(0)
				hasNext, hasPrev := false, false
				for v := uint64(0); v < 256; v++ {
					if !tn.Contains(v) {
						continue
					}
					if v >= n && !hasNext {
						next, hasNext = v, true
					}
					if v <= n {
						prev, hasPrev = v, true
					}
				}
				// Upper bits are known zeros, so 64-bit results
				// must agree with the 8-bit search.
				if got, ok := tn.next(n); ok != hasNext || (ok && got != next) {
					t.Fatalf("%v.next(%d) = %d,%v want %d,%v", tn, n, got, ok, next, hasNext)
				}
				if got, ok := tn.prev(n); ok != hasPrev || (ok && got != prev) {
					t.Fatalf("%v.prev(%d) = %d,%v want %d,%v", tn, n, got, ok, prev, hasPrev)
				}
			}
		}
	}
	// 64-bit edges.
	if v, ok := TnumUnknown().next(^uint64(0)); !ok || v != ^uint64(0) {
		t.Fatal("next at max")
	}
	if _, ok := TnumConst(5).next(6); ok {
		t.Fatal("next past const")
	}
	if v, ok := (Tnum{1 << 63, 1}).prev(^uint64(0)); !ok || v != 1<<63|1 {
		t.Fatal("prev high")
	}
}

// TestTnumMulPrecise checks that multiplication keeps trailing zeros and
// exact constants.
func TestTnumMulPrecise(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 1000 {
		x, y := r.Uint64(), r.Uint64()
		if got := TnumConst(x).Mul(TnumConst(y)); got != TnumConst(x*y) {
			t.Fatalf("%#x*%#x = %v", x, y, got)
		}
		a := Tnum{0, 0xff << 8}
		b := Tnum{0, 0xff << 4}
		got := a.Mul(b)
		if tz := bits.TrailingZeros64(got.Mask | got.Value); tz < 12 {
			t.Fatalf("%v*%v = %v lost trailing zeros", a, b, got)
		}
	}
}
