//go:build !linux

package bpfvm_test

import "testing"

// graphRun: the kernel side of the graph tests runs on Linux only.
func graphRun(*testing.T) string { return "" }

func kernelGraphRuns(*testing.T, string, string, []string) []string { return nil }

func kernelGraphVerdict(*testing.T, string, string, string) (bool, []string) { return true, nil }
