package verifier

import (
	"math/rand/v2"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

// The constant fast path agrees with the general scalar arithmetic.
func TestEvalALUMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []uint8{isa.ALUAdd, isa.ALUSub, isa.ALUMul, isa.ALUOr, isa.ALUAnd, isa.ALUXor, isa.ALULsh, isa.ALURsh, isa.ALUArsh, isa.ALUDiv, isa.ALUMod}
	vals := []uint64{0, 1, 2, 7, 63, 64, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 63, ^uint64(0), ^uint64(0) - 1}
	for range 20000 {
		op := ops[rng.IntN(len(ops))]
		a, b := vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]
		if rng.IntN(2) == 0 {
			a, b = rng.Uint64(), rng.Uint64()>>rng.IntN(64)
		}
		is64, signed := rng.IntN(2) == 0, rng.IntN(2) == 0 && (op == isa.ALUDiv || op == isa.ALUMod)
		got, ok := evalALU(op, a, b, is64, signed)
		if !ok {
			t.Fatalf("op %#x not evaluated", op)
		}
		s := Const(a)
		if !is64 {
			s = Const(uint64(uint32(a)))
		}
		s.ALU(op, Const(b), is64, signed)
		if !s.IsConst() || s.Const() != got {
			t.Fatalf("op %#x a=%#x b=%#x is64=%v signed=%v: fast %#x, scalar %v", op, a, b, is64, signed, got, s)
		}
	}
}
