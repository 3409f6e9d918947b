package verifier

import (
	"fmt"
	"math/bits"
)

// Tnum is a tristate number: the bits set in Mask are unknown, every other
// bit equals the same bit of Value. A well-formed Tnum has Value&Mask == 0.
// It describes the set of all x with x&^Mask == Value.
type Tnum struct {
	Value uint64
	Mask  uint64
}

// TnumConst returns the tnum of the single value v.
func TnumConst(v uint64) Tnum { return Tnum{Value: v} }

// TnumUnknown returns the tnum with every bit unknown.
func TnumUnknown() Tnum { return Tnum{Mask: ^uint64(0)} }

// TnumRange returns the smallest tnum containing every value in [min, max]
// (min <= max): the bits above the highest bit in which min and max differ
// are known.
func TnumRange(min, max uint64) Tnum {
	n := bits.Len64(min ^ max)
	if n == 64 {
		return TnumUnknown()
	}
	low := uint64(1)<<n - 1
	return Tnum{Value: min &^ low, Mask: low}
}

// IsConst reports whether every bit is known.
func (a Tnum) IsConst() bool { return a.Mask == 0 }

// IsUnknown reports whether no bit is known.
func (a Tnum) IsUnknown() bool { return a.Mask == ^uint64(0) }

// Equals reports whether a and b are the same tnum.
func (a Tnum) Equals(b Tnum) bool { return a == b }

// Contains reports whether v is one of the values a describes.
func (a Tnum) Contains(v uint64) bool { return v&^a.Mask == a.Value }

// In reports whether every value of a is also a value of b (a ⊆ b): a knows
// at least the bits b knows, with the same values. This is the kernel's
// tnum_in(b, a).
func (a Tnum) In(b Tnum) bool {
	return a.Mask&^b.Mask == 0 && a.Value&^b.Mask == b.Value
}

// Add returns the tnum of x+y for x in a and y in b.
func (a Tnum) Add(b Tnum) Tnum {
	sum := a.Value + b.Value
	// Bits where adding the unknown bits as all-ones changes the carry
	// chain are unknown too.
	carries := (sum + a.Mask + b.Mask) ^ sum
	mask := carries | a.Mask | b.Mask
	return Tnum{Value: sum &^ mask, Mask: mask}
}

// Sub returns the tnum of x-y for x in a and y in b.
func (a Tnum) Sub(b Tnum) Tnum {
	diff := a.Value - b.Value
	// The extremes of the borrow chain: a's unknowns all one and b's all
	// zero, or the reverse.
	borrows := (diff + a.Mask) ^ (diff - b.Mask)
	mask := borrows | a.Mask | b.Mask
	return Tnum{Value: diff &^ mask, Mask: mask}
}

// Neg returns the tnum of -x for x in a.
func (a Tnum) Neg() Tnum { return TnumConst(0).Sub(a) }

// Mul returns the tnum of x*y for x in a and y in b: the product of the
// known parts plus, for each bit of a that is one or unknown, the matching
// shifted partial product of b with its unknown bits left unknown.
func (a Tnum) Mul(b Tnum) Tnum {
	known := a.Value * b.Value
	acc := Tnum{}
	for a.Value|a.Mask != 0 {
		switch {
		case a.Value&1 != 0:
			// b's known bits are already in known.
			acc = acc.Add(Tnum{Mask: b.Mask})
		case a.Mask&1 != 0:
			// Either nothing or all of b.
			acc = acc.Add(Tnum{Mask: b.Value | b.Mask})
		}
		a = a.Rsh(1)
		b = b.Lsh(1)
	}
	return TnumConst(known).Add(acc)
}

// And returns the tnum of x&y for x in a and y in b.
func (a Tnum) And(b Tnum) Tnum {
	v := a.Value & b.Value
	return Tnum{Value: v, Mask: (a.Value | a.Mask) & (b.Value | b.Mask) &^ v}
}

// Or returns the tnum of x|y for x in a and y in b.
func (a Tnum) Or(b Tnum) Tnum {
	v := a.Value | b.Value
	return Tnum{Value: v, Mask: (a.Mask | b.Mask) &^ v}
}

// Xor returns the tnum of x^y for x in a and y in b.
func (a Tnum) Xor(b Tnum) Tnum {
	mask := a.Mask | b.Mask
	return Tnum{Value: (a.Value ^ b.Value) &^ mask, Mask: mask}
}

// Lsh returns the tnum of x<<shift (shift < 64).
func (a Tnum) Lsh(shift uint8) Tnum {
	return Tnum{Value: a.Value << shift, Mask: a.Mask << shift}
}

// Rsh returns the tnum of x>>shift, a logical shift (shift < 64).
func (a Tnum) Rsh(shift uint8) Tnum {
	return Tnum{Value: a.Value >> shift, Mask: a.Mask >> shift}
}

// Arsh returns the tnum of an arithmetic right shift by shift of the low
// insnBits (32 or 64) bits of x; a 32-bit result is zero-extended. An
// unknown sign bit makes every bit it is copied into unknown.
func (a Tnum) Arsh(shift uint8, insnBits uint8) Tnum {
	if insnBits == 32 {
		return Tnum{
			Value: uint64(uint32(int32(uint32(a.Value)) >> shift)),
			Mask:  uint64(uint32(int32(uint32(a.Mask)) >> shift)),
		}
	}
	return Tnum{
		Value: uint64(int64(a.Value) >> shift),
		Mask:  uint64(int64(a.Mask) >> shift),
	}
}

// Intersect returns the tnum of the values in both a and b. Where a and b
// disagree on a known bit the result has that bit set, as the kernel's
// tnum_intersect; use Overlaps to detect that the intersection is empty.
func (a Tnum) Intersect(b Tnum) Tnum {
	mask := a.Mask & b.Mask
	return Tnum{Value: (a.Value | b.Value) &^ mask, Mask: mask}
}

// Overlaps reports whether a and b have a value in common.
func (a Tnum) Overlaps(b Tnum) bool {
	return (a.Value^b.Value)&^(a.Mask|b.Mask) == 0
}

// Union returns the smallest tnum containing every value of a and of b
// (the join): a bit stays known only where both know it with one value.
func (a Tnum) Union(b Tnum) Tnum {
	mask := a.Mask | b.Mask | (a.Value ^ b.Value)
	return Tnum{Value: a.Value &^ mask, Mask: mask}
}

// Cast truncates a to its low size bytes (1, 2, 4 or 8); the upper bits
// become known zeros.
func (a Tnum) Cast(size uint8) Tnum {
	if size >= 8 {
		return a
	}
	m := uint64(1)<<(size*8) - 1
	return Tnum{Value: a.Value & m, Mask: a.Mask & m}
}

// Subreg returns the low 32 bits of a, zero-extended.
func (a Tnum) Subreg() Tnum { return a.Cast(4) }

// ClearSubreg returns a with its low 32 bits known zeros.
func (a Tnum) ClearSubreg() Tnum {
	return Tnum{Value: a.Value &^ 0xffffffff, Mask: a.Mask &^ 0xffffffff}
}

// WithSubreg returns a with its low 32 bits replaced by those of sub.
func (a Tnum) WithSubreg(sub Tnum) Tnum {
	return a.ClearSubreg().Or(sub.Subreg())
}

// ConstSubreg returns a with its low 32 bits replaced by the constant v.
func (a Tnum) ConstSubreg(v uint32) Tnum { return a.WithSubreg(TnumConst(uint64(v))) }

// SubregIsConst reports whether the low 32 bits are all known.
func (a Tnum) SubregIsConst() bool { return uint32(a.Mask) == 0 }

// IsAligned reports whether every value of a is a multiple of size, a power
// of two (0 counts as no constraint).
func (a Tnum) IsAligned(size uint64) bool {
	if size == 0 {
		return true
	}
	return (a.Value|a.Mask)&(size-1) == 0
}

// String formats a as the kernel's verifier log does: a constant as a number
// (decimal up to 65535, hex above), anything else as "(value; mask)".
func (a Tnum) String() string {
	if a.Mask == 0 {
		return formatUnum(a.Value)
	}
	return fmt.Sprintf("(%#x; %#x)", a.Value, a.Mask)
}

// next returns the smallest value of a that is >= n.
func (a Tnum) next(n uint64) (uint64, bool) {
	conflict := (n ^ a.Value) &^ a.Mask
	if conflict == 0 {
		return n, true
	}
	// The answer keeps n's bits above some position k, where n has a zero
	// that a allows to be one, sets bit k and takes a's smallest filling
	// below it. k must be at or above n's highest conflicting bit; the
	// lowest such k gives the smallest answer.
	hb := bits.Len64(conflict) - 1
	cand := ^n & (a.Value | a.Mask) &^ (uint64(1)<<hb - 1)
	if cand == 0 {
		return 0, false
	}
	k := bits.TrailingZeros64(cand)
	below := uint64(1)<<k - 1
	return n&^(below|1<<k) | 1<<k | a.Value&below, true
}

// prev returns the largest value of a that is <= n.
func (a Tnum) prev(n uint64) (uint64, bool) {
	// Complementing every bit reverses the order.
	c := Tnum{Value: ^a.Value &^ a.Mask, Mask: a.Mask}
	x, ok := c.next(^n)
	return ^x, ok
}

// formatUnum prints an unsigned bound as the kernel's verbose_unum.
func formatUnum(v uint64) string {
	if v <= 0xffff {
		return fmt.Sprintf("%d", v)
	}
	return fmt.Sprintf("%#x", v)
}

// formatSnum prints a signed bound as the kernel's verbose_snum.
func formatSnum(v int64) string {
	if v >= -0x8000 && v <= 0x7fff {
		return fmt.Sprintf("%d", v)
	}
	return fmt.Sprintf("%#x", uint64(v))
}
