//go:build amd64 && linux

package amd64

import "github.com/bpfvm/bpfvm/vm"

// Native routines (natives_amd64.s) are helpers that JIT code calls
// directly: a CALL to code in the Go binary's text, with no exit to Go.

func nativeCPU()
func nativeZero()
func nativeRandom()

// nativeAddrs returns the routines' entry points (their ABI0 symbols).
func nativeAddrs() (cpu, zero, random uintptr)

// routines are the entry points by Native, and the span of text they lie
// in (what near memory must reach with rel32 calls).
type routines struct {
	addr   [vm.NativeCount]uint64
	lo, hi uint64
}

func loadRoutines() routines {
	var r routines
	cpu, zero, random := nativeAddrs()
	r.addr[vm.NativeCPU], r.addr[vm.NativeZero], r.addr[vm.NativeRandom] = uint64(cpu), uint64(zero), uint64(random)
	r.lo, r.hi = ^uint64(0), 0
	for _, a := range r.addr[1:] {
		r.lo, r.hi = min(r.lo, a), max(r.hi, a)
	}
	return r
}

// nativeRoutines is constant after init: the routines' addresses.
var nativeRoutines = loadRoutines()

// reach reports whether every call site in [base, base+size) reaches
// target with a rel32 displacement. Deciding on the whole mapping rather
// than the site makes the decision independent of the layout, so that the
// passes after allocation converge.
func reach(target, base uint64, size int) bool {
	const limit = 1<<31 - 64 // a call's displacement counts from its end
	end := base + uint64(size)
	if target >= base {
		return target-base <= limit
	}
	return end-target <= limit
}
