//go:build amd64 && linux

package amd64

import "github.com/bpfvm/bpfvm/isa"

// The internal instruction isa.OpCPUIndex (dst = the runner's CPU index),
// which rewrites emit for inlined bpf_get_smp_processor_id and per-CPU map
// lookups: one load from the execution context's cpu field, which
// the run's setup keeps equal to env.CPU.

// cpuIndex emits dst = CPU index.
func (c *compiler) cpuIndex(ins isa.Instruction) error {
	c.a.load(8, false, regMap[ins.Dst], mem{regCtx, offCPU})
	return nil
}
