package helper

import (
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// cpuHelpers report the CPU a run is on and draw random numbers
// (kernel/bpf/helpers.c); the JIT calls native routines for them.
var cpuHelpers = []Helper{
	{Proto: Proto{Name: "bpf_get_prandom_u32"}, Func: helperGetPrandomU32, Native: vm.NativeRandom},
	{Proto: Proto{Name: "bpf_get_smp_processor_id"}, Func: helperGetSMPProcessorID, Native: vm.NativeCPU, Inline: InlineCPUID},
	{Proto: Proto{Name: "bpf_get_numa_node_id"}, Func: helperGetNumaNodeID, Native: vm.NativeZero},
}

// helperGetPrandomU32 is bpf_get_prandom_u32: a per-runner PCG generator,
// seeded randomly, so concurrent runs share no state.
func helperGetPrandomU32(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	if e.Rand != nil {
		return uint64(e.Rand.Uint32()), nil
	}
	return uint64(runner.Of(e).Random()), nil
}

// helperGetSMPProcessorID is bpf_get_smp_processor_id: the runner's number.
func helperGetSMPProcessorID(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return uint64(e.CPU), nil
}

// helperGetNumaNodeID is bpf_get_numa_node_id: bpfvm has one node.
func helperGetNumaNodeID(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return 0, nil
}
