// Package rlimit is cilium/ebpf's rlimit for code that switches to bpfvm
// by its imports: bpfvm's maps and programs live in the process's own
// memory, which RLIMIT_MEMLOCK does not limit, so there is nothing to
// remove.
package rlimit

// RemoveMemlock does nothing and returns nil: bpfvm locks no memory
// (cilium/ebpf's raises RLIMIT_MEMLOCK for kernels before 5.11, which
// charged BPF memory to it).
func RemoveMemlock() error { return nil }
