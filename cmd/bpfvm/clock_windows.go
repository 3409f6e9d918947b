//go:build windows

package main

import "time"

// processStart is what threadCPU counts from.
var processStart = time.Now()

// threadCPU returns the wall time since the process started, where there is
// no per-thread CPU clock to read: loop rounds are measured on a quiet
// thread either way.
func threadCPU() (time.Duration, error) { return time.Since(processStart), nil }

// monotonicNow is the time since the process started, where there is no
// CLOCK_MONOTONIC to read.
func monotonicNow() time.Duration { return time.Since(processStart) }
