package verifier

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

// aluOps are the operations ALU computes, with the signed flag.
var aluOps = []struct {
	name   string
	op     uint8
	signed bool
}{
	{"add", isa.ALUAdd, false},
	{"sub", isa.ALUSub, false},
	{"mul", isa.ALUMul, false},
	{"div", isa.ALUDiv, false},
	{"sdiv", isa.ALUDiv, true},
	{"mod", isa.ALUMod, false},
	{"smod", isa.ALUMod, true},
	{"or", isa.ALUOr, false},
	{"and", isa.ALUAnd, false},
	{"xor", isa.ALUXor, false},
	{"lsh", isa.ALULsh, false},
	{"rsh", isa.ALURsh, false},
	{"arsh", isa.ALUArsh, false},
	{"neg", isa.ALUNeg, false},
	{"mov", isa.ALUMov, false},
}

// refOp extends refALU with mov.
func refOp(op uint8, x, y uint64, is64, signed bool) uint64 {
	if op == isa.ALUMov {
		if is64 {
			return y
		}
		return uint64(uint32(y))
	}
	return refALU(op, x, y, is64, signed)
}

// shiftScalar returns a random shift amount scalar: mostly in range, at
// times not, to exercise masking.
func shiftScalar(r *rand.Rand) (Scalar, []uint64) {
	seeds := seedSet(r)
	if r.IntN(4) != 0 {
		for i := range seeds {
			seeds[i] &= 63
		}
	}
	style := uint8(r.IntN(8))
	if style == 0 {
		seeds = seeds[:1]
	}
	s := abstract(seeds, style)
	return s, members(r, s, seeds)
}

// checkALU applies op abstractly and checks every pair of members.
func checkALU(t *testing.T, op uint8, signed, is64 bool, a, b Scalar, am, bm []uint64) {
	t.Helper()
	res := a
	res.ALU(op, b, is64, signed)
	again := res
	again.Sync()
	if again != res {
		t.Fatalf("op %#x is64=%v signed=%v: %v ⊕ %v = %+v not synced (%+v)", op, is64, signed, a, b, res, again)
	}
	for _, x := range am {
		for _, y := range bm {
			want := refOp(op, x, y, is64, signed)
			if !res.Contains(want) {
				t.Fatalf("op %#x is64=%v signed=%v:\n  a=%v (%+v)\n  b=%v (%+v)\n  res=%v (%+v)\n  %#x op %#x = %#x not contained",
					op, is64, signed, a, a, b, b, res, res, x, y, want)
			}
		}
	}
}

// TestALUSound is the main soundness property: for random abstract
// operands and concrete members of them, the concrete result of every
// operation in both widths is in the abstract result.
func TestALUSound(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, o := range aluOps {
		for _, is64 := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/64=%v", o.name, is64), func(t *testing.T) {
				for range 4000 {
					a, am := randScalar(r)
					b, bm := randScalar(r)
					if isShift(o.op) {
						b, bm = shiftScalar(r)
					}
					checkALU(t, o.op, o.signed, is64, a, b, am, bm)
				}
			})
		}
	}
}

// TestALUSoundEnumerable checks operations on small scalars against every
// pair of values they hold.
func TestALUSoundEnumerable(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	done := 0
	for done < 6000 {
		a, am := enumerable(r)
		b, bm := enumerable(r)
		if len(am) == 0 || len(bm) == 0 || len(am)*len(bm) > 4000 {
			continue
		}
		a.Sync()
		b.Sync()
		o := aluOps[done%len(aluOps)]
		if isShift(o.op) {
			for i := range bm {
				bm[i] &= 63
			}
			b = exactOf(bm)
		}
		checkALU(t, o.op, o.signed, done%2 == 0, a, b, am, bm)
		done++
	}
}

// refUnary is the runtime's byte-order, truncation and sign-extension.
func refUnary(kind string, n int, x uint64) uint64 {
	switch kind {
	case "bswap":
		switch n {
		case 16:
			return uint64(bits.ReverseBytes16(uint16(x)))
		case 32:
			return uint64(bits.ReverseBytes32(uint32(x)))
		}
		return bits.ReverseBytes64(x)
	case "le":
		if n == 64 {
			return x
		}
		return x & (1<<n - 1)
	case "trunc":
		return x & (1<<(8*n) - 1)
	case "sext":
		k := uint(8 * n)
		return uint64(int64(x<<(64-k)) >> (64 - k))
	case "movsx32":
		k := uint(8 * n)
		if n == 4 {
			return uint64(uint32(x))
		}
		return uint64(uint32(int32(uint32(x)<<(32-k)) >> (32 - k)))
	}
	panic(kind)
}

func TestUnarySound(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	type unary struct {
		kind string
		n    int
		f    func(*Scalar)
	}
	var ops []unary
	for _, n := range []int{16, 32, 64} {
		ops = append(ops,
			unary{"bswap", n, func(s *Scalar) { s.Bswap(n) }},
			unary{"bswap", n, func(s *Scalar) { s.ToBE(n) }},
			unary{"le", n, func(s *Scalar) { s.ToLE(n) }})
	}
	for _, n := range []int{1, 2, 4} {
		ops = append(ops,
			unary{"trunc", n, func(s *Scalar) { s.Truncate(n) }},
			unary{"sext", n, func(s *Scalar) { s.SignExtendLoad(n) }},
			unary{"sext", n, func(s *Scalar) { s.MovSX(n, true) }},
			unary{"movsx32", n, func(s *Scalar) { s.MovSX(n, false) }})
	}
	for i := range 4000 {
		a, am := randScalar(r)
		if i%2 == 0 {
			var in []uint64
			a, in = enumerable(r)
			a.Sync()
			if len(in) == 0 || len(in) > 64 {
				continue
			}
			am = in
		}
		for _, u := range ops {
			res := a
			u.f(&res)
			for _, x := range am {
				if want := refUnary(u.kind, u.n, x); !res.Contains(want) {
					t.Fatalf("%s%d(%v) = %v misses %#x (from %#x)", u.kind, u.n, a, res, want, x)
				}
			}
		}
	}
	// Size 8 and bad sizes leave values alone or forget them.
	s := URange(3, 9)
	s.Truncate(8)
	s.SignExtendLoad(8)
	if s != URange(3, 9) {
		t.Fatalf("size 8 changed %v", s)
	}
	s.Bswap(8)
	if !s.IsUnknown() {
		t.Fatalf("bad bswap width: %v", s)
	}
}

// TestHackersDelight checks the exact range bounds of and, or and xor
// exhaustively on 5-bit intervals.
func TestHackersDelight(t *testing.T) {
	const top = 1 << 4
	for a := uint64(0); a < 32; a++ {
		for b := a; b < 32; b++ {
			for c := uint64(0); c < 32; c++ {
				for d := c; d < 32; d++ {
					var mnA, mnO, mnX uint64 = 31, 31, 31
					var mxA, mxO, mxX uint64
					for x := a; x <= b; x++ {
						for y := c; y <= d; y++ {
							mnA, mxA = min(mnA, x&y), max(mxA, x&y)
							mnO, mxO = min(mnO, x|y), max(mxO, x|y)
							mnX, mxX = min(mnX, x^y), max(mxX, x^y)
						}
					}
					got := [6]uint64{minAnd(a, b, c, d, top), maxAnd(a, b, c, d, top), minOr(a, b, c, d, top),
						maxOr(a, b, c, d, top), minXor(a, b, c, d, top), maxXor(a, b, c, d, top)}
					if want := [6]uint64{mnA, mxA, mnO, mxO, mnX, mxX}; got != want {
						t.Fatalf("[%d,%d] op [%d,%d]: got %v want %v (and, or, xor min/max)", a, b, c, d, got, want)
					}
				}
			}
		}
	}
}

// TestALUPrecision lists results the kernel computes exactly (or that ours
// computes exactly where the kernel does not), in log format.
func TestALUPrecision(t *testing.T) {
	type bin struct {
		name   string
		a      Scalar
		op     uint8
		signed bool
		b      Scalar
		is64   bool
		want   string
	}
	u8 := URange(0, 255)
	neg := SRange(-10, -1)
	// Upper halves unknown, low halves bounded.
	low100 := Unknown()
	low100.U32min, low100.U32max = 0, 100
	low100.Sync()
	low100shifted := low100
	low100shifted.ALU(isa.ALULsh, Const(32), true, false)
	lowNeg := Unknown()
	lowNeg.S32min, lowNeg.S32max = -5, 5
	lowNeg.Sync()
	lowNegShifted := lowNeg
	lowNegShifted.ALU(isa.ALULsh, Const(32), true, false)
	tests := []bin{
		{"const add", Const(3), isa.ALUAdd, false, Const(4), true, "7"},
		{"const sub wraps", Const(3), isa.ALUSub, false, Const(4), true, "-1"},
		{"const sub32 wraps", Const(3), isa.ALUSub, false, Const(4), false, "0xffffffff"},
		{"const mul", Const(6), isa.ALUMul, false, Const(7), true, "42"},
		{"const div", Const(42), isa.ALUDiv, false, Const(5), true, "8"},
		{"const div 0", Const(42), isa.ALUDiv, false, Const(0), true, "0"},
		{"const mod 0", Const(42), isa.ALUMod, false, Const(0), true, "42"},
		{"const mod32 0 zext", Const(0xffffffff_00000005), isa.ALUMod, false, Const(0), false, "5"},
		{"const sdiv", Const(uint64(math.MaxUint64 - 9)), isa.ALUDiv, true, Const(3), true, "-3"},
		{"const smod", Const(uint64(math.MaxUint64 - 9)), isa.ALUMod, true, Const(3), true, "-1"},
		{"sdiv INT_MIN/-1", Const(1 << 63), isa.ALUDiv, true, Const(math.MaxUint64), true, "0x8000000000000000"},
		{"smod INT_MIN%-1", Const(1 << 63), isa.ALUMod, true, Const(math.MaxUint64), true, "0"},
		{"sdiv32 INT_MIN/-1", Const(1 << 31), isa.ALUDiv, true, Const(math.MaxUint32), false, "0x80000000"},
		{"const and", Const(0xf0), isa.ALUAnd, false, Const(0x3c), true, "48"},
		{"const or", Const(0xf0), isa.ALUOr, false, Const(0x0f), true, "255"},
		{"const xor", Const(0xff), isa.ALUXor, false, Const(0x0f), true, "240"},
		{"const lsh", Const(1), isa.ALULsh, false, Const(40), true, "0x10000000000"},
		{"const lsh32", Const(1), isa.ALULsh, false, Const(31), false, "0x80000000"},
		{"const rsh", Const(0x100), isa.ALURsh, false, Const(4), true, "16"},
		{"const arsh", Const(uint64(math.MaxUint64 - 255)), isa.ALUArsh, false, Const(4), true, "-16"},
		{"const arsh32", Const(0x80000000), isa.ALUArsh, false, Const(31), false, "0xffffffff"},
		{"const neg", Const(5), isa.ALUNeg, false, Unknown(), true, "-5"},
		{"const neg32", Const(5), isa.ALUNeg, false, Unknown(), false, "0xfffffffb"},
		{"lsh masked", Const(1), isa.ALULsh, false, Const(65), true, "2"},
		{"lsh32 masked", Const(1), isa.ALULsh, false, Const(33), false, "2"},
		{"range add", URange(10, 20), isa.ALUAdd, false, URange(1, 2), true,
			"scalar(smin=umin=smin32=umin32=11,smax=umax=smax32=umax32=22,var_off=(0x0; 0x1f))"},
		{"range sub", URange(10, 20), isa.ALUSub, false, URange(1, 2), true,
			"scalar(smin=umin=smin32=umin32=8,smax=umax=smax32=umax32=19,var_off=(0x0; 0x1f))"},
		{"and mask", Unknown(), isa.ALUAnd, false, Const(0xff), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=255,var_off=(0x0; 0xff))"},
		{"and range", URange(0, 1000), isa.ALUAnd, false, Const(0x3f), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=63,var_off=(0x0; 0x3f))"},
		{"or bit", URange(0, 15), isa.ALUOr, false, Const(128), true,
			"scalar(smin=umin=smin32=umin32=128,smax=umax=smax32=umax32=143,var_off=(0x80; 0xf))"},
		{"rsh byte", u8, isa.ALURsh, false, Const(4), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=15,var_off=(0x0; 0xf))"},
		{"lsh byte", u8, isa.ALULsh, false, Const(8), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=0xff00,var_off=(0x0; 0xff00))"},
		{"rsh 63", Unknown(), isa.ALURsh, false, Const(63), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=1,var_off=(0x0; 0x1))"},
		{"arsh 63", Unknown(), isa.ALUArsh, false, Const(63), true,
			"scalar(smin=smin32=-1,smax=smax32=0)"},
		{"mul range", u8, isa.ALUMul, false, Const(4), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=1020,var_off=(0x0; 0x3fc))"},
		{"mul signed", neg, isa.ALUMul, false, Const(3), true,
			"scalar(smin=smin32=-30,smax=smax32=-3,umin=0xffffffffffffffe2,umax=0xfffffffffffffffd,umin32=0xffffffe2,umax32=0xfffffffd,var_off=(0xffffffffffffffe0; 0x1f))"},
		{"neg range", u8, isa.ALUNeg, false, Unknown(), true,
			"scalar(smin=smin32=-255,smax=smax32=0)"},
		{"div by const", URange(100, 200), isa.ALUDiv, false, Const(10), true,
			"scalar(smin=umin=smin32=umin32=10,smax=umax=smax32=umax32=20,var_off=(0x0; 0x1f))"},
		{"div by range with 0", URange(100, 200), isa.ALUDiv, false, URange(0, 10), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=200,var_off=(0x0; 0xff))"},
		{"mod by const", Unknown(), isa.ALUMod, false, Const(6), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=5,var_off=(0x0; 0x7))"},
		{"mod small dividend", URange(2, 5), isa.ALUMod, false, Const(10), true,
			"scalar(smin=umin=smin32=umin32=2,smax=umax=smax32=umax32=5,var_off=(0x0; 0x7))"},
		{"mod power of two", URange(0, 1000), isa.ALUMod, false, Const(16), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=15,var_off=(0x0; 0xf))"},
		{"smod", SRange(-100, 100), isa.ALUMod, true, Const(7), true,
			"scalar(smin=smin32=-6,smax=smax32=6)"},
		{"sdiv", SRange(-100, 100), isa.ALUDiv, true, Const(-7 & math.MaxUint64), true,
			"scalar(smin=smin32=-14,smax=smax32=14)"},
		{"sdiv32", SRange(-100, 100), isa.ALUDiv, true, Const(7), false,
			"scalar(smin=0,smax=umax=0xffffffff,smin32=-14,smax32=14,var_off=(0x0; 0xffffffff))"},
		{"alu32 zext", Unknown(), isa.ALUAdd, false, Const(0), false,
			"scalar(smin=0,smax=umax=0xffffffff,var_off=(0x0; 0xffffffff))"},
		{"alu32 keeps low bounds", URange(0x1_00000000, 0x1_000000ff), isa.ALUAdd, false, Const(1), false,
			"scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=256,var_off=(0x0; 0x1ff))"},
		{"lsh 32 uses low half", low100, isa.ALULsh, false, Const(32), true,
			"scalar(smin=smin32=0,smax=umax=0x6400000000,smax32=umax32=0,var_off=(0x0; 0x7f00000000))"},
		{"<<32 s>>32", low100shifted, isa.ALUArsh, false, Const(32), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=100,var_off=(0x0; 0x7f))"},
		{"<<32 s>>32 negative", lowNegShifted, isa.ALUArsh, false, Const(32), true,
			"scalar(smin=smin32=-5,smax=smax32=5)"},
		{"variable shift", Const(1), isa.ALULsh, false, URange(0, 3), true,
			"scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=8,var_off=(0x0; 0xf))"},
		{"variable rsh", u8, isa.ALURsh, false, URange(4, 7), true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=15,var_off=(0x0; 0xf))"},
	}
	for _, tt := range tests {
		got := tt.a
		got.ALU(tt.op, tt.b, tt.is64, tt.signed)
		if s := got.String(); s != tt.want {
			t.Errorf("%s: %v op %v:\n got %s\nwant %s", tt.name, tt.a, tt.b, s, tt.want)
		}
	}

	unary := []struct {
		name string
		a    Scalar
		f    func(*Scalar)
		want string
	}{
		{"bswap16 const", Const(0x1234), func(s *Scalar) { s.Bswap(16) }, "13330"},
		{"bswap32 const", Const(0x12345678), func(s *Scalar) { s.ToBE(32) }, "0x78563412"},
		{"bswap64 const", Const(1), func(s *Scalar) { s.Bswap(64) }, "0x100000000000000"},
		{"bswap16 byte", u8, func(s *Scalar) { s.Bswap(16) }, "scalar(smin=smin32=0,smax=umax=smax32=umax32=0xff00,var_off=(0x0; 0xff00))"},
		{"le16", Unknown(), func(s *Scalar) { s.ToLE(16) }, "scalar(smin=smin32=0,smax=umax=smax32=umax32=0xffff,var_off=(0x0; 0xffff))"},
		{"le64", u8, func(s *Scalar) { s.ToLE(64) }, u8.String()},
		{"trunc byte of range", URange(0x1_00, 0x1_0f), func(s *Scalar) { s.Truncate(1) }, "scalar(smin=smin32=0,smax=umax=smax32=umax32=15,var_off=(0x0; 0xf))"},
		{"trunc wraps", URange(0xfe, 0x101), func(s *Scalar) { s.Truncate(1) }, "scalar(smin=smin32=0,smax=umax=smax32=umax32=255,var_off=(0x0; 0xff))"},
		{"trunc 32", SRange(-1, 1), func(s *Scalar) { s.Truncate(4) }, "scalar(smin=0,smax=umax=0xffffffff,smin32=-1,smax32=1,var_off=(0x0; 0xffffffff))"},
		{"sext byte", URange(0x80, 0x81), func(s *Scalar) { s.SignExtendLoad(1) }, "scalar(smin=smin32=-128,smax=smax32=-127,umin=0xffffffffffffff80,umax=0xffffffffffffff81,umin32=0xffffff80,umax32=0xffffff81,var_off=(0xffffffffffffff80; 0x1))"},
		{"sext small", URange(0, 100), func(s *Scalar) { s.MovSX(1, true) }, "scalar(smin=smin32=0,smax=umax=smax32=umax32=100,var_off=(0x0; 0x7f))"},
		{"movsx32", Const(0xff), func(s *Scalar) { s.MovSX(1, false) }, "0xffffffff"},
		{"movsx 16 unknown", Unknown(), func(s *Scalar) { s.MovSX(2, true) }, "scalar(smin=smin32=-32768,smax=smax32=32767)"},
	}
	for _, tt := range unary {
		got := tt.a
		tt.f(&got)
		if s := got.String(); s != tt.want {
			t.Errorf("%s: %v:\n got %s\nwant %s", tt.name, tt.a, s, tt.want)
		}
	}
}

// TestShiftOK checks the immediate shift rule.
func TestShiftOK(t *testing.T) {
	for _, tt := range []struct {
		imm  int32
		is64 bool
		ok   bool
	}{{0, true, true}, {63, true, true}, {64, true, false}, {-1, true, false}, {31, false, true}, {32, false, false}} {
		if ShiftOK(tt.imm, tt.is64) != tt.ok {
			t.Errorf("ShiftOK(%d, %v) != %v", tt.imm, tt.is64, tt.ok)
		}
	}
}

// TestALUInvalid checks that an impossible operand gives an impossible
// result rather than an arbitrary one.
func TestALUInvalid(t *testing.T) {
	for _, o := range aluOps {
		if o.op == isa.ALUNeg || o.op == isa.ALUMov {
			continue
		}
		s := emptyScalar()
		s.ALU(o.op, Const(3), true, o.signed)
		if s.Valid() {
			t.Errorf("%s on invalid dst gave %v", o.name, s)
		}
		s = Const(3)
		s.ALU(o.op, emptyScalar(), false, o.signed)
		if s.Valid() {
			t.Errorf("%s32 with invalid src gave %v", o.name, s)
		}
	}
}

// FuzzScalarALU builds two abstract scalars from three values each (in one
// of several styles) and checks the soundness property for one operation
// on all pairs of those values and the scalars' bounds.
func FuzzScalarALU(f *testing.F) {
	f.Add(uint64(0), uint64(10), uint64(5), uint64(1), uint64(1), uint64(1), uint8(isa.ALUAdd), uint8(7))
	f.Add(uint64(1<<63), uint64(1<<63+5), uint64(1<<63), uint64(math.MaxUint64), uint64(0), uint64(1), uint8(isa.ALUDiv), uint8(0xff))
	f.Add(uint64(0x7fffffff), uint64(0x80000001), uint64(0x80000000), uint64(31), uint64(33), uint64(0), uint8(isa.ALULsh), uint8(0x35))
	f.Add(uint64(math.MaxUint64-3), uint64(5), uint64(0), uint64(7), uint64(math.MaxUint64), uint64(3), uint8(isa.ALUMod), uint8(0xbd))
	f.Add(uint64(0xff), uint64(0x1ff), uint64(0x180), uint64(0xf0), uint64(0xf), uint64(0x3c), uint8(isa.ALUXor), uint8(0x66))
	f.Fuzz(func(t *testing.T, x1, x2, x3, y1, y2, y3 uint64, op, style uint8) {
		ops := []uint8{isa.ALUAdd, isa.ALUSub, isa.ALUMul, isa.ALUDiv, isa.ALUOr, isa.ALUAnd, isa.ALULsh,
			isa.ALURsh, isa.ALUNeg, isa.ALUMod, isa.ALUXor, isa.ALUMov, isa.ALUArsh}
		o := ops[int(op)%len(ops)]
		signed := op&0x80 != 0
		is64 := style&0x80 != 0
		xs, ys := []uint64{x1, x2, x3}, []uint64{y1, y2, y3}
		if style&7 == 0 {
			xs = xs[:1]
		}
		if style>>3&7 == 0 {
			ys = ys[:1]
		}
		a, b := abstract(xs, style&7), abstract(ys, style>>3&7)
		am := append(xs, a.Umin, a.Umax, uint64(a.Smin), uint64(a.Smax))
		bm := append(ys, b.Umin, b.Umax, uint64(b.Smin), uint64(b.Smax))
		checkALU(t, o, signed, is64, a, b, am, bm)
		// Unary operations on a.
		for _, n := range []int{1, 2, 4} {
			for _, k := range []string{"trunc", "sext", "movsx32"} {
				res := a
				switch k {
				case "trunc":
					res.Truncate(n)
				case "sext":
					res.SignExtendLoad(n)
				default:
					res.MovSX(n, false)
				}
				for _, x := range am {
					if want := refUnary(k, n, x); !res.Contains(want) {
						t.Fatalf("%s%d(%v) = %v misses %#x", k, n, a, res, want)
					}
				}
			}
		}
		for _, n := range []int{16, 32, 64} {
			res := a
			res.Bswap(n)
			for _, x := range am {
				if want := refUnary("bswap", n, x); !res.Contains(want) {
					t.Fatalf("bswap%d(%v) = %v misses %#x", n, a, res, want)
				}
			}
		}
	})
}

// BenchmarkALUAdd measures a typical 64-bit operation with its Sync.
func BenchmarkALUAdd(b *testing.B) {
	x, y := URange(0, 1000), SRange(-5, 5)
	for b.Loop() {
		z := x
		z.ALU(isa.ALUAdd, y, true, false)
	}
}
