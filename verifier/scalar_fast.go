package verifier

import (
	"github.com/bpfvm/bpfvm/isa"
)

// evalALU computes an ALU operation on constants with the runtime's
// semantics (RFC 9669: division by zero gives 0, modulo by zero leaves the
// dividend, shifts are masked, 32-bit results are zero-extended). The
// verifier uses it as a fast path: straight-line code is mostly constants,
// and the general interval arithmetic costs far more.
func evalALU(op uint8, a, b uint64, is64, signed bool) (uint64, bool) {
	if !is64 {
		a, b = uint64(uint32(a)), uint64(uint32(b))
	}
	var r uint64
	switch op {
	case isa.ALUAdd:
		r = a + b
	case isa.ALUSub:
		r = a - b
	case isa.ALUMul:
		r = a * b
	case isa.ALUOr:
		r = a | b
	case isa.ALUAnd:
		r = a & b
	case isa.ALUXor:
		r = a ^ b
	case isa.ALULsh:
		if is64 {
			r = a << (b & 63)
		} else {
			r = uint64(uint32(a) << (b & 31))
		}
	case isa.ALURsh:
		if is64 {
			r = a >> (b & 63)
		} else {
			r = uint64(uint32(a) >> (b & 31))
		}
	case isa.ALUArsh:
		if is64 {
			r = uint64(int64(a) >> (b & 63))
		} else {
			r = uint64(uint32(int32(uint32(a)) >> (b & 31)))
		}
	case isa.ALUDiv, isa.ALUMod:
		r = divMod(op, a, b, is64, signed)
	default:
		return 0, false
	}
	if !is64 {
		r = uint64(uint32(r))
	}
	return r, true
}

func divMod(op uint8, a, b uint64, is64, signed bool) uint64 {
	if b == 0 || !is64 && uint32(b) == 0 {
		if op == isa.ALUDiv {
			return 0
		}
		return a
	}
	if !signed {
		if op == isa.ALUDiv {
			return a / b
		}
		return a % b
	}
	if is64 {
		x, y := int64(a), int64(b)
		if op == isa.ALUDiv {
			return uint64(x / y)
		}
		return uint64(x % y)
	}
	x, y := int32(uint32(a)), int32(uint32(b))
	if op == isa.ALUDiv {
		return uint64(uint32(x / y))
	}
	return uint64(uint32(x % y))
}
