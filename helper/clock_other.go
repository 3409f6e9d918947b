//go:build !linux

package helper

import "os"

// clockBoot is CLOCK_MONOTONIC where there is no CLOCK_BOOTTIME.
func clockBoot() uint64 { return monotonicNS() }

// threadID is the process id where threads have no pid of their own: the
// main thread's, as the kernel's task pid of a single-threaded process.
func threadID() uint32 { return uint32(os.Getpid()) }
