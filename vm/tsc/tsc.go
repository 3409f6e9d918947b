// Package tsc is a cheap monotonic clock for both engines' timed may_goto:
// the x86-64 time-stamp counter, read natively by the JIT and through a
// small assembly function by the interpreter, and calibrated once per
// process against Go's monotonic clock. Elsewhere it falls back to Go's
// monotonic clock in nanoseconds.
package tsc

import (
	"sync"
	"time"
)

// calibration is the counter's rate, measured once per process (the rate
// of an invariant TSC is a constant of the machine).
var calibration = sync.OnceValue(calibrate)

// PerSecond returns the counter's ticks per second.
func PerSecond() uint64 { return calibration() }

// Ticks converts a duration to counter ticks (at least 1).
func Ticks(d time.Duration) uint64 {
	if d <= 0 {
		return 1
	}
	hz := PerSecond()
	// d * hz / 1e9 without overflow for durations up to hours.
	sec, ns := uint64(d/time.Second), uint64(d%time.Second)
	return max(sec*hz+ns*hz/1e9, 1)
}

// calibrate measures the counter against the monotonic clock over a few
// milliseconds.
func calibrate() uint64 {
	if !native {
		return 1e9
	}
	const window = 4 * time.Millisecond
	t0, c0 := time.Now(), Now()
	for time.Since(t0) < window {
	}
	t1, c1 := time.Now(), Now()
	hz := float64(c1-c0) / t1.Sub(t0).Seconds()
	return max(uint64(hz), 1)
}
