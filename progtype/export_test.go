package progtype

import "github.com/cilium/ebpf"

// SyscallHelpers is syscallHelpers, for the kernel comparisons of the
// sets of the types bpfvm does not model yet (tracing, lsm, syscall).
var SyscallHelpers = syscallHelpers

// TracingHelpers is tracingHelpers for a BPF_PROG_TYPE_TRACING program.
func TracingHelpers(a ebpf.AttachType) HelperSet { return tracingHelpers(a, hasTrampoline(a)) }

// LSMHelpers is lsmHelpers.
func LSMHelpers(a ebpf.AttachType, hook string, sleepable bool) HelperSet {
	return lsmHelpers(a, hook, sleepable)
}
