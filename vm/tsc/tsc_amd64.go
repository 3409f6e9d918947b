//go:build amd64

package tsc

// native reports that Now reads the time-stamp counter.
const native = true

// Now returns the time-stamp counter (RDTSC).
//
//go:noescape
func Now() uint64
