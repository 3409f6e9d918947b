package progtype

import "github.com/cilium/ebpf"

// The tracing types' helper sets, for the kernel comparisons of the types
// bpfvm does not model yet (tracing, lsm, syscall).
var (
	KprobeHelpers        = kprobeHelpers
	TracepointHelpers    = tracepointHelpers
	RawTracepointHelpers = rawTracepointHelpers
	PerfEventHelpers     = perfEventHelpers
	SyscallHelpers       = syscallHelpers
)

// TracingHelpers is tracingHelpers for a BPF_PROG_TYPE_TRACING program.
func TracingHelpers(a ebpf.AttachType) HelperSet { return tracingHelpers(a, hasTrampoline(a)) }

// LSMHelpers is lsmHelpers.
func LSMHelpers(a ebpf.AttachType, hook string, sleepable bool) HelperSet {
	return lsmHelpers(a, hook, sleepable)
}
