//go:build !linux

package bpfvm_test

import (
	"testing"

	"github.com/cilium/ebpf"
)

// kernelFirstTask needs the kernel's iterators (Linux).
func kernelFirstTask(*testing.T, *ebpf.CollectionSpec) {}

// kernelIterMaps needs the kernel's iterators (Linux).
func kernelIterMaps(*testing.T, *ebpf.CollectionSpec, string) {}
