package verifier

// The results of scalar ALU operations are remembered per verification.
// The interval arithmetic behind Scalar.ALU is exact and costly (about a
// microsecond for a 64-bit operation on ranges), and large programs repeat
// the same operations on the same abstract values on path after path: the
// scale programs' hash rounds, called 90 times, mostly operate on unknown
// 32-bit words. A lookup costs a hash of two scalars.

// aluKey is one scalar operation.
type aluKey struct {
	op           uint8
	is64, signed bool
	a, b         Scalar
}

// aluCacheMax bounds the cache; it is emptied when full.
const aluCacheMax = 1 << 16

// scalarALU returns a op b, as Scalar.ALU computes it.
func (v *verifier) scalarALU(op uint8, a, b Scalar, is64, signed bool) Scalar {
	k := aluKey{op: op, is64: is64, signed: signed, a: a, b: b}
	if r, ok := v.aluCache[k]; ok {
		return r
	}
	r := a
	r.ALU(op, b, is64, signed)
	if v.aluCache == nil || len(v.aluCache) >= aluCacheMax {
		v.aluCache = make(map[aluKey]Scalar, 64)
	}
	v.aluCache[k] = r
	return r
}
