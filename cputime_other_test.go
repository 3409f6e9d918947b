//go:build !linux

package bpfvm_test

import "time"

// onThreadCPU runs f and returns the wall time it took (the thread's CPU
// time is Linux's).
func onThreadCPU(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
