//go:build !linux

package bpfvm_test

import (
	"testing"

	"github.com/cilium/ebpf"
)

// kernelIterTasks needs the kernel's iterator links, which only Linux has.
func kernelIterTasks(t *testing.T, _ *ebpf.CollectionSpec) { t.Log("no kernel iterators here") }
