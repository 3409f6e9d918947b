//go:build linux

package bpfvm_test

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// pinCPU keeps the calling goroutine on CPU 0, so that the kernel's test
// runs output to one ring.
func pinCPU(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Skipf("sched_setaffinity: %v", err)
	}
}
