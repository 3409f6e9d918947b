package verifier

// The results of scalar ALU operations are remembered per verification.
// The interval arithmetic behind Scalar.ALU is exact and costly (about a
// microsecond for a 64-bit operation on ranges), and large programs repeat
// the same operations on the same abstract values on path after path: the
// scale programs' hash rounds, called 90 times, mostly operate on unknown
// 32-bit words.
//
// The cache is direct-mapped: an operation has one slot, chosen by a hash
// of its operands, and a new result replaces whatever was there. A lookup
// or an insertion is a hash of two scalars and one comparison, with no
// allocation, which matters where most operations are new (straight-line
// code whose ranges keep growing); a Go map cost about as much as the
// arithmetic it saved there. The table starts small and grows while it
// keeps missing, so small programs allocate little.

// aluKey is one scalar operation.
type aluKey struct {
	op           uint8
	is64, signed bool
	a, b         Scalar
}

// aluEntry is a slot of the cache.
type aluEntry struct {
	key  aluKey
	res  Scalar
	used bool
}

// aluCache is the direct-mapped cache of scalar ALU results.
type aluCache struct {
	slots  []aluEntry
	misses int // since the table last grew
}

// Table sizes: the first one, and the largest (about 13 MB, reached only
// after some 40,000 operations that missed).
const (
	aluCacheMin = 1 << 6
	aluCacheMax = 1 << 16
)

// scalarALU returns a op b, as Scalar.ALU computes it.
func (v *verifier) scalarALU(op uint8, a, b Scalar, is64, signed bool) Scalar {
	c := &v.aluCache
	k := aluKey{op: op, is64: is64, signed: signed, a: a, b: b}
	h := k.hash()
	if len(c.slots) > 0 {
		if e := &c.slots[h&uint64(len(c.slots)-1)]; e.used && e.key == k {
			return e.res
		}
	}
	r := a
	r.ALU(op, b, is64, signed)
	c.misses++
	if n := len(c.slots); n == 0 || n < aluCacheMax && c.misses > 2*n {
		c.grow()
	}
	c.slots[h&uint64(len(c.slots)-1)] = aluEntry{key: k, res: r, used: true}
	return r
}

// grow makes the table four times larger, keeping what it holds.
func (c *aluCache) grow() {
	n := max(aluCacheMin, 4*len(c.slots))
	old := c.slots
	c.slots = make([]aluEntry, n)
	for i := range old {
		if e := &old[i]; e.used {
			c.slots[e.key.hash()&uint64(n-1)] = *e
		}
	}
	c.misses = 0
}

// hash mixes every field of the operation.
func (k *aluKey) hash() uint64 {
	h := uint64(k.op)
	if k.is64 {
		h |= 1 << 8
	}
	if k.signed {
		h |= 1 << 9
	}
	for _, s := range [2]*Scalar{&k.a, &k.b} {
		h = mix(h, s.Var.Value)
		h = mix(h, s.Var.Mask)
		h = mix(h, uint64(s.Smin))
		h = mix(h, uint64(s.Smax))
		h = mix(h, s.Umin)
		h = mix(h, s.Umax)
		h = mix(h, uint64(uint32(s.S32min))|uint64(uint32(s.S32max))<<32)
		h = mix(h, uint64(s.U32min)|uint64(s.U32max)<<32)
	}
	return h ^ h>>31
}

func mix(h, x uint64) uint64 {
	h = (h ^ x) * 0x9e3779b97f4a7c15
	return h ^ h>>32
}
