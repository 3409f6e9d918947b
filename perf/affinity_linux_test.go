//go:build linux

package perf_test

import "golang.org/x/sys/unix"

// pinToCPU0 keeps the calling thread on CPU 0, where the kernel's
// BPF_F_CURRENT_CPU samples then go.
func pinToCPU0() error {
	var set unix.CPUSet
	set.Set(0)
	return unix.SchedSetaffinity(0, &set)
}
