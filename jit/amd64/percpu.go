//go:build amd64 && linux

package amd64

import (
	"unsafe"

	"bpfvm/isa"
	"bpfvm/vm"
)

// The internal instruction isa.OpCPUIndex (dst = the runner's CPU index),
// which rewrites emit for inlined bpf_get_smp_processor_id and per-CPU map
// lookups: one load from the execution context, where sync keeps the run's
// env.CPU.

var offCPU = int32(unsafe.Offsetof(header{}.cpu))

// syncCPU records the CPU of the run entering or resuming on the context.
func (h *header) syncCPU(env *vm.Env) { h.cpu = uint64(env.CPU) }

// cpuIndex emits dst = CPU index.
func (c *compiler) cpuIndex(ins isa.Instruction) error {
	c.a.load(8, false, regMap[ins.Dst], mem{regCtx, offCPU})
	return nil
}
