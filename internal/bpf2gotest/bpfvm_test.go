package bpf2gotest

import "github.com/bpfvm/bpfvm"

// ebpfRunOptions are bpfvm's RunOptions, named apart from cilium/ebpf's in
// this package, which holds both back ends' generated code.
type ebpfRunOptions = bpfvm.RunOptions
