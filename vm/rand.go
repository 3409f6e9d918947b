package vm

import "math/bits"

// Rand is the state of bpf_get_prandom_u32's generator: PCG with a 128-bit
// state and the DXSM output function, the algorithm of math/rand/v2's PCG.
// It is a plain pair of words so that native code (the JIT's in-image
// routine) can step the same generator as the Go helper, and a run gives
// the same numbers on either engine.
type Rand struct {
	Hi, Lo uint64
}

// Seed sets the generator's state.
func (r *Rand) Seed(hi, lo uint64) { r.Hi, r.Lo = hi, lo }

// Uint32 steps the generator and returns the high 32 bits of its output,
// what bpf_get_prandom_u32 returns.
func (r *Rand) Uint32() uint32 {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	hi, lo := bits.Mul64(r.Lo, mulLo)
	hi += r.Hi*mulLo + r.Lo*mulHi
	lo2, carry := bits.Add64(lo, incLo, 0)
	hi += incHi + carry
	r.Lo, r.Hi = lo2, hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	hi *= lo2 | 1
	return uint32(hi >> 32)
}
