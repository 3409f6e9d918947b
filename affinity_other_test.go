//go:build !linux

package bpfvm_test

import "testing"

// pinCPU skips: the kernel comparisons it serves need Linux.
func pinCPU(t *testing.T) { t.Skip("no CPU affinity on this OS") }
