//go:build linux

package helper

import "golang.org/x/sys/unix"

// clockBoot returns CLOCK_BOOTTIME in nanoseconds: CLOCK_MONOTONIC plus
// the time suspended.
func clockBoot() uint64 { return clockNS(unix.CLOCK_BOOTTIME) }

// threadID is the OS thread's id, the kernel task's pid.
func threadID() uint32 { return uint32(unix.Gettid()) }
