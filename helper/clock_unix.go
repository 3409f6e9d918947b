//go:build unix

package helper

import "golang.org/x/sys/unix"

// clockMonotonic returns CLOCK_MONOTONIC in nanoseconds (0 if unreadable).
func clockMonotonic() uint64 { return clockNS(unix.CLOCK_MONOTONIC) }

func clockNS(clock int32) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}
