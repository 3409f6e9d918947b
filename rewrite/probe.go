package rewrite

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// ProbeLoads turns the loads the verifier marked as reading kernel
// objects (verifier.InsnAux.Probe) into probe loads (isa.ModeProbe,
// isa.ModeProbeSX), in place: the kernel's BPF_PROBE_MEM conversion. The
// pointers they go through are kernel addresses in the kernel; in bpfvm
// they are whatever the program made of them, so the engines read 0 where
// the run may not read instead of failing or faulting. One instruction
// for one: jumps and aux data stay aligned.
func ProbeLoads(insns []isa.Instruction, aux []verifier.InsnAux) {
	for pc := range insns {
		ins := &insns[pc]
		if pc >= len(aux) || !aux[pc].Probe || ins.Class() != isa.ClassLDX {
			continue
		}
		switch ins.Op & 0xe0 {
		case isa.ModeMEM:
			ins.Op = ins.Op&^0xe0 | isa.ModeProbe
		case isa.ModeMEMSX:
			ins.Op = ins.Op&^0xe0 | isa.ModeProbeSX
		}
	}
}
