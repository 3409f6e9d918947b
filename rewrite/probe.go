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

// InlineCasts replaces calls of bpf_cast_to_kern_ctx and bpf_rdonly_cast
// with r0 = r1, as the kernel's fixup does: the casts only change what the
// verifier knows of the pointer. It returns the number of calls replaced.
func InlineCasts(p *Program) int {
	n := 0
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := &p.Insns[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) && (ins.Imm == isa.KfuncCastToKernCtx || ins.Imm == isa.KfuncRdonlyCast) {
			*ins = isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R0, Src: isa.R1}
			n++
		}
	}
	return n
}
