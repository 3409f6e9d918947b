package helper

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm/vm"
)

// timeHelpers read the clocks (kernel/bpf/helpers.c).
var timeHelpers = []Helper{
	{Proto: Proto{Name: "bpf_ktime_get_ns"}, Func: helperKtimeGetNS},
	{Proto: Proto{Name: "bpf_ktime_get_boot_ns"}, Func: helperKtimeGetBootNS},
	{Proto: Proto{Name: "bpf_ktime_get_coarse_ns"}, Func: helperKtimeGetCoarseNS},
	{Proto: Proto{Name: "bpf_jiffies64"}, Func: helperJiffies64},
}

// monoBase and monoStart tie Go's monotonic clock (read through the vDSO,
// without a system call) to CLOCK_MONOTONIC: the kernel's ktime_get_ns is
// monoBase + time.Since(monoStart).
var (
	monoStart = time.Now()
	monoBase  = clockNS(unix.CLOCK_MONOTONIC)
)

func clockNS(clock int32) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// monotonicNS returns CLOCK_MONOTONIC in nanoseconds.
func monotonicNS() uint64 { return monoBase + uint64(time.Since(monoStart)) }

// jiffiesHZ is the tick rate bpf_jiffies64 counts in (CONFIG_HZ=1000).
const jiffiesHZ = 1000

// initialJiffies is the kernel's INITIAL_JIFFIES on 64-bit: jiffies start
// five minutes before wrapping 32 bits, to catch wrap-around bugs early.
const initialJiffies = 1<<32 - 300*jiffiesHZ

// helperKtimeGetNS is bpf_ktime_get_ns: CLOCK_MONOTONIC.
func helperKtimeGetNS(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return monotonicNS(), nil
}

// helperKtimeGetBootNS is bpf_ktime_get_boot_ns: CLOCK_BOOTTIME, which also
// counts time suspended.
func helperKtimeGetBootNS(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return clockNS(unix.CLOCK_BOOTTIME), nil
}

// helperKtimeGetCoarseNS is bpf_ktime_get_coarse_ns. The kernel's coarse
// clock is CLOCK_MONOTONIC at tick resolution; bpfvm returns the fine
// value, which is as cheap here.
func helperKtimeGetCoarseNS(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return monotonicNS(), nil
}

// helperJiffies64 is bpf_jiffies64: CLOCK_MONOTONIC counted at 1000 Hz
// from the kernel's INITIAL_JIFFIES. (The kernel counts at its CONFIG_HZ
// from boot; programs use differences, which this keeps right at 1000 Hz.)
func helperJiffies64(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return initialJiffies + monotonicNS()/(1e9/jiffiesHZ), nil
}
