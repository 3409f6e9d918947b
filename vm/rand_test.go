package vm

import (
	"math/rand/v2"
	"testing"
)

// TestRandIsPCG checks that Rand steps exactly as math/rand/v2's PCG.
func TestRandIsPCG(t *testing.T) {
	for _, seed := range [][2]uint64{{0, 0}, {1, 2}, {^uint64(0), 12345}, {0xdeadbeef, 0xfeedface}} {
		var r Rand
		r.Seed(seed[0], seed[1])
		p := rand.NewPCG(seed[0], seed[1])
		for i := range 1000 {
			if got, want := r.Uint32(), uint32(p.Uint64()>>32); got != want {
				t.Fatalf("seed %v step %d: %#x, want %#x", seed, i, got, want)
			}
		}
	}
}
