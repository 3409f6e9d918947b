package verifier

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

var jumpOps = []struct {
	name string
	op   uint8
}{
	{"jeq", isa.JumpEQ}, {"jne", isa.JumpNE}, {"jgt", isa.JumpGT}, {"jge", isa.JumpGE},
	{"jlt", isa.JumpLT}, {"jle", isa.JumpLE}, {"jsgt", isa.JumpSGT}, {"jsge", isa.JumpSGE},
	{"jslt", isa.JumpSLT}, {"jsle", isa.JumpSLE}, {"jset", isa.JumpSet},
}

// refJump is the runtime's condition, written independently.
func refJump(op uint8, x, y uint64, is32 bool) bool {
	if is32 {
		x, y = uint64(uint32(x)), uint64(uint32(y))
	}
	sx, sy := int64(x), int64(y)
	if is32 {
		sx, sy = int64(int32(x)), int64(int32(y))
	}
	switch op {
	case isa.JumpEQ:
		return x == y
	case isa.JumpNE:
		return x != y
	case isa.JumpGT:
		return x > y
	case isa.JumpGE:
		return x >= y
	case isa.JumpLT:
		return x < y
	case isa.JumpLE:
		return x <= y
	case isa.JumpSGT:
		return sx > sy
	case isa.JumpSGE:
		return sx >= sy
	case isa.JumpSLT:
		return sx < sy
	case isa.JumpSLE:
		return sx <= sy
	case isa.JumpSet:
		return x&y != 0
	}
	panic("bad jump")
}

// checkBranch checks BranchTaken and Refine for both outcomes against every
// pair of members.
func checkBranch(t *testing.T, op uint8, is32 bool, a, b Scalar, am, bm []uint64) {
	t.Helper()
	bt := BranchTaken(op, a, b, is32)
	for _, taken := range []bool{true, false} {
		ra, rb := a, b
		Refine(op, &ra, &rb, is32, taken)
		if ra.Valid() != rb.Valid() {
			t.Fatalf("op %#x: one side invalid: %v %v", op, ra, rb)
		}
		for _, x := range am {
			for _, y := range bm {
				if refJump(op, x, y, is32) != taken {
					continue
				}
				if (taken && bt == 0) || (!taken && bt == 1) {
					t.Fatalf("op %#x is32=%v: BranchTaken(%v, %v) = %d but %#x, %#x goes %v", op, is32, a, b, bt, x, y, taken)
				}
				if !ra.Contains(x) || !rb.Contains(y) {
					t.Fatalf("op %#x is32=%v taken=%v:\n  a=%v\n  b=%v\n  refined a=%v\n  refined b=%v\n  lost %#x, %#x",
						op, is32, taken, a, b, ra, rb, x, y)
				}
			}
		}
	}
	// Comparing a register with itself.
	for _, taken := range []bool{true, false} {
		ra := a
		Refine(op, &ra, &ra, is32, taken)
		for _, x := range am {
			if refJump(op, x, x, is32) == taken && !ra.Contains(x) {
				t.Fatalf("op %#x is32=%v taken=%v: self-refined %v to %v, lost %#x", op, is32, taken, a, ra, x)
			}
		}
	}
}

// related returns a scalar built from values near those of a, so that the
// two often overlap or touch.
func related(r *rand.Rand, am []uint64) (Scalar, []uint64) {
	seeds := []uint64{am[r.IntN(len(am))]}
	for n := r.IntN(3); n > 0; n-- {
		seeds = append(seeds, am[r.IntN(len(am))]+r.Uint64N(5)-2)
	}
	if r.IntN(3) == 0 {
		// A single-bit constant, as JSET tests use.
		seeds = []uint64{1 << r.IntN(64)}
	}
	style := uint8(r.IntN(8))
	if style == 0 {
		seeds = seeds[:1]
	}
	s := abstract(seeds, style)
	return s, members(r, s, seeds)
}

func TestBranchSound(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, j := range jumpOps {
		for _, is32 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/32=%v", j.name, is32), func(t *testing.T) {
				for range 3000 {
					a, am := randScalar(r)
					b, bm := randScalar(r)
					if r.IntN(2) == 0 {
						b, bm = related(r, am)
					}
					checkBranch(t, j.op, is32, a, b, am, bm)
				}
			})
		}
	}
}

// TestBranchExact checks, on scalars small enough to enumerate, that
// BranchTaken decides every comparison whose outcome is fixed, and that
// refinement keeps exactly the feasible values where the domain can say so.
func TestBranchExact(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for i := 0; i < 6000; {
		a, am := enumerable(r)
		b, bm := enumerable(r)
		if r.IntN(2) == 0 && len(am) > 0 {
			b, bm = related(r, am)
			bm = bm[:1]
			b = Const(bm[0])
		}
		if len(am) == 0 || len(bm) == 0 || len(am)*len(bm) > 2000 {
			continue
		}
		a.Sync()
		i++
		j := jumpOps[i%len(jumpOps)]
		is32 := i%3 == 0
		checkBranch(t, j.op, is32, a, b, am, bm)
		// EQ/NE/JSET on 32 bits compare projections; the others are
		// decided exactly.
		if is32 && (j.op == isa.JumpEQ || j.op == isa.JumpNE || j.op == isa.JumpSet) {
			continue
		}
		all, none := true, true
		for _, x := range am {
			for _, y := range bm {
				if refJump(j.op, x, y, is32) {
					none = false
				} else {
					all = false
				}
			}
		}
		want := -1
		switch {
		case all:
			want = 1
		case none:
			want = 0
		}
		got := BranchTaken(j.op, a, b, is32)
		if j.op == isa.JumpSet && want == 1 && !b.IsConst() && !a.IsConst() {
			// JSET is exact only against a constant.
			continue
		}
		if got != want {
			t.Fatalf("%s is32=%v: BranchTaken(%v, %v) = %d, want %d", j.name, is32, a, b, got, want)
		}
	}
}

// TestBranchTakenTable lists outcomes the kernel's is_branch_taken decides.
func TestBranchTakenTable(t *testing.T) {
	u8 := URange(0, 255)
	tests := []struct {
		op   uint8
		a, b Scalar
		is32 bool
		want int
	}{
		{isa.JumpEQ, Const(5), Const(5), false, 1},
		{isa.JumpEQ, Const(5), Const(6), false, 0},
		{isa.JumpNE, Const(5), Const(6), false, 1},
		{isa.JumpEQ, u8, Const(256), false, 0},
		{isa.JumpEQ, u8, Const(255), false, -1},
		{isa.JumpEQ, FromTnum(Tnum{0, 0xfe}), Const(1), false, 0}, // even values
		{isa.JumpGT, u8, Const(255), false, 0},
		{isa.JumpGT, u8, Const(254), false, -1},
		{isa.JumpLE, u8, Const(255), false, 1},
		{isa.JumpLT, URange(10, 20), URange(21, 30), false, 1},
		{isa.JumpGE, URange(10, 20), URange(20, 30), false, -1},
		{isa.JumpGE, URange(20, 20), URange(10, 20), false, 1},
		{isa.JumpSGT, SRange(-10, -1), Const(0), false, 0},
		{isa.JumpSLT, SRange(-10, -1), Const(0), false, 1},
		{isa.JumpGT, SRange(-10, -1), Const(0), false, 1}, // unsigned, negatives are huge
		{isa.JumpSGE, Unknown(), Const(math.MaxInt64 + 1), false, 1},
		{isa.JumpSet, Const(6), Const(2), false, 1},
		{isa.JumpSet, u8, Const(0x100), false, 0},
		{isa.JumpSet, URange(1, 255), Const(0xff), false, 1},
		{isa.JumpSet, URange(0, 255), Const(0xff), false, -1},
		{isa.JumpSet, FromTnum(Tnum{1, 0xfe}), Unknown(), false, -1},
		// 32-bit jumps look only at the low halves.
		{isa.JumpEQ, Const(0x1_00000005), Const(5), true, 1},
		{isa.JumpEQ, Const(0x1_00000005), Const(5), false, 0},
		{isa.JumpGT, URange(0x1_00000000, 0x1_000000ff), Const(0xff), true, 0},
		{isa.JumpSLT, Const(0xffffffff), Const(0), true, 1},
		{isa.JumpSLT, Const(0xffffffff), Const(0), false, 0},
		{isa.JumpSet, Const(0x1_00000000), Const(0x1_00000000), true, 0},
		{isa.JumpA, Const(1), Const(1), false, -1},
	}
	for _, tt := range tests {
		if got := BranchTaken(tt.op, tt.a, tt.b, tt.is32); got != tt.want {
			t.Errorf("BranchTaken(%#x, %v, %v, is32=%v) = %d, want %d", tt.op, tt.a, tt.b, tt.is32, got, tt.want)
		}
	}
}

// TestRefineTable lists refinements with their results in log format.
func TestRefineTable(t *testing.T) {
	tests := []struct {
		name  string
		op    uint8
		a, b  Scalar
		is32  bool
		taken bool
		wantA string
		wantB string
	}{
		{"jgt fall through", isa.JumpGT, Unknown(), Const(10), false, false,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=10,var_off=(0x0; 0xf))", "10"},
		{"jgt taken", isa.JumpGT, URange(0, 100), Const(10), false, true,
			"scalar(smin=umin=smin32=umin32=11,smax=umax=smax32=umax32=100,var_off=(0x0; 0x7f))", "10"},
		{"jlt taken reg", isa.JumpLT, URange(0, 100), URange(5, 50), false, true,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=49,var_off=(0x0; 0x3f))",
			"scalar(smin=umin=smin32=umin32=5,smax=umax=smax32=umax32=50,var_off=(0x0; 0x3f))"},
		{"jeq taken", isa.JumpEQ, Unknown(), Const(7), false, true, "7", "7"},
		{"jeq regs", isa.JumpEQ, URange(0, 10), URange(5, 20), false, true,
			"scalar(smin=umin=smin32=umin32=5,smax=umax=smax32=umax32=10,var_off=(0x0; 0xf))",
			"scalar(smin=umin=smin32=umin32=5,smax=umax=smax32=umax32=10,var_off=(0x0; 0xf))"},
		{"jne edge", isa.JumpNE, URange(0, 10), Const(0), false, true,
			"scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=10,var_off=(0x0; 0xf))", "0"},
		{"jne even edge", isa.JumpNE, FromTnum(Tnum{0, 0xe}), Const(0), false, true,
			"scalar(smin=umin=smin32=umin32=2,smax=umax=smax32=umax32=14,var_off=(0x0; 0xe))", "0"},
		{"jsgt fall through", isa.JumpSGT, SRange(-100, 100), Const(0), false, false,
			"scalar(smin=smin32=-100,smax=smax32=0)", "0"},
		{"jslt taken", isa.JumpSLT, Unknown(), Const(0), false, true,
			"scalar(smax=-1,umin=0x8000000000000000,var_off=(0x8000000000000000; 0x7fffffffffffffff))", "0"},
		// The kernel's log: "if w0 <= 0x960 goto" falls through on a
		// 24-bit value.
		{"jle32 fall through", isa.JumpLE, URange(0, 0xffffff), Const(0x960), true, false,
			"scalar(smin=umin=smin32=umin32=2401,smax=umax=smax32=umax32=0xffffff,var_off=(0x0; 0xffffff))", "2400"},
		{"jlt32 on 64-bit value", isa.JumpLT, URange(0x1_00000000, 0x1_ffffffff), Const(16), true, true,
			"scalar(smin=umin=0x100000000,smax=umax=0x10000000f,smin32=0,smax32=umax32=15,var_off=(0x100000000; 0xf))", "16"},
		{"jeq32", isa.JumpEQ, Unknown(), Const(5), true, true,
			"scalar(smin=0x8000000000000005,smax=0x7fffffff00000005,umin=smin32=umin32=5,umax=0xffffffff00000005,smax32=umax32=5,var_off=(0x5; 0xffffffff00000000))", "5"},
		{"jset single bit", isa.JumpSet, URange(0, 255), Const(0x10), false, true,
			"scalar(smin=umin=smin32=umin32=16,smax=umax=smax32=umax32=255,var_off=(0x10; 0xef))", "16"},
		{"jset not taken", isa.JumpSet, URange(0, 255), Const(0x10), false, false,
			"scalar(smin=smin32=0,smax=umax=smax32=umax32=239,var_off=(0x0; 0xef))", "16"},
		{"jset excludes zero", isa.JumpSet, URange(0, 255), Const(0xff), false, true,
			"scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=255,var_off=(0x0; 0xff))", "255"},
		{"jset regs", isa.JumpSet, FromTnum(Tnum{0, 0x11}), FromTnum(Tnum{0, 0x12}), false, true,
			"scalar(smin=umin=smin32=umin32=16,smax=umax=smax32=umax32=17,var_off=(0x10; 0x1))",
			"scalar(smin=umin=smin32=umin32=16,smax=umax=smax32=umax32=18,var_off=(0x10; 0x2))"},
	}
	for _, tt := range tests {
		a, b := tt.a, tt.b
		Refine(tt.op, &a, &b, tt.is32, tt.taken)
		if a.String() != tt.wantA || b.String() != tt.wantB {
			t.Errorf("%s:\n got %s, %s\nwant %s, %s", tt.name, a, b, tt.wantA, tt.wantB)
		}
	}
}

// TestRefineImpossible checks that refining into a dead branch makes both
// sides invalid.
func TestRefineImpossible(t *testing.T) {
	tests := []struct {
		op    uint8
		a, b  Scalar
		is32  bool
		taken bool
	}{
		{isa.JumpGT, URange(0, 10), Const(10), false, true},
		{isa.JumpGT, Unknown(), Const(math.MaxUint64), false, true},
		{isa.JumpLT, Unknown(), Const(0), false, true},
		{isa.JumpSLT, Unknown(), Const(1 << 63), false, true},
		{isa.JumpSGT, Unknown(), Const(1<<63 - 1), false, true},
		{isa.JumpLT, Unknown(), Const(0), true, true},
		{isa.JumpSLT, Unknown(), Const(0x80000000), true, true},
		{isa.JumpEQ, Const(1), Const(2), false, true},
		{isa.JumpEQ, FromTnum(Tnum{0, 0xfe}), Const(1), false, true},
		{isa.JumpNE, Const(3), Const(3), false, true},
		{isa.JumpNE, Const(0x1_00000003), Const(3), true, true},
		{isa.JumpSet, URange(0, 15), Const(0x10), false, true},
		{isa.JumpSet, Const(0x10), Const(0x10), false, false},
		{isa.JumpGE, URange(0, 10), URange(11, 20), false, true},
	}
	for _, tt := range tests {
		a, b := tt.a, tt.b
		Refine(tt.op, &a, &b, tt.is32, tt.taken)
		if a.Valid() || b.Valid() {
			t.Errorf("Refine(%#x, %v, %v, is32=%v, %v) = %v, %v; want invalid", tt.op, tt.a, tt.b, tt.is32, tt.taken, a, b)
		}
	}
	// The same register.
	s := URange(0, 10)
	Refine(isa.JumpGT, &s, &s, false, true)
	if s.Valid() {
		t.Errorf("r > r refined to %v", s)
	}
	s = URange(0, 10)
	Refine(isa.JumpSet, &s, &s, false, true)
	if s.String() != "scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=10,var_off=(0x0; 0xf))" {
		t.Errorf("r & r != 0 refined to %v", s)
	}
	s = URange(0, 10)
	Refine(isa.JumpSet, &s, &s, false, false)
	if s.String() != "0" {
		t.Errorf("r & r == 0 refined to %v", s)
	}
}

// FuzzBranch builds two abstract scalars from three values each and checks
// BranchTaken and Refine for one jump on all pairs of those values.
func FuzzBranch(f *testing.F) {
	f.Add(uint64(0), uint64(255), uint64(7), uint64(10), uint64(10), uint64(10), uint8(isa.JumpGT), uint8(0x3f))
	f.Add(uint64(1<<63), uint64(1<<63-1), uint64(0), uint64(0), uint64(1), uint64(0), uint8(isa.JumpSLT), uint8(0x7f))
	f.Add(uint64(0x1_00000005), uint64(5), uint64(0xffffffff), uint64(5), uint64(5), uint64(5), uint8(isa.JumpEQ|1), uint8(0xc7))
	f.Add(uint64(0xf0), uint64(0x0f), uint64(0x100), uint64(0x10), uint64(0x10), uint64(0x10), uint8(isa.JumpSet), uint8(0x3e))
	f.Fuzz(func(t *testing.T, x1, x2, x3, y1, y2, y3 uint64, op, style uint8) {
		j := jumpOps[int(op>>4)%len(jumpOps)]
		is32 := op&1 != 0
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
		checkBranch(t, j.op, is32, a, b, am, bm)
	})
}

// BenchmarkRefine measures a typical register-constant refinement.
func BenchmarkRefine(b *testing.B) {
	x, y := Unknown(), Const(100)
	for b.Loop() {
		p, q := x, y
		Refine(isa.JumpGT, &p, &q, false, false)
	}
}
