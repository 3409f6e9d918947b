package bpfvm_test

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// onThreadCPU runs f locked to its OS thread and returns the CPU time the
// thread spent in it: a loaded machine's preemptions are not counted, as
// the kernel's test run does not count the time it is rescheduled
// (bpf_test_run's need_resched), so the two compare on a busy host.
func onThreadCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a)
	f()
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b)
	return time.Duration(b.Nano() - a.Nano())
}
