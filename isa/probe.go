package isa

// ModeProbe and ModeProbeSX are the modes of the probe loads (LDX) the
// rewrite puts in place of the loads the verifier proved read a kernel
// object (verifier.InsnAux.Probe): the kernel's BPF_PROBE_MEM and
// BPF_PROBE_MEMSX, with their encodings (the LD-only modes ABS and IND).
// A probe load reads what is at the address if the run may read it (its
// stack, a readable region), and 0 otherwise, checked or not: what the
// kernel's exception table gives a faulting one. Only the engines accept
// them (ValidateXlated).
const (
	ModeProbe   uint8 = ModeABS
	ModeProbeSX uint8 = ModeIND
)

// IsProbe reports whether ins is a probe load.
func (ins Instruction) IsProbe() bool {
	m := ins.Op & 0xe0
	return ins.Class() == ClassLDX && (m == ModeProbe || m == ModeProbeSX && ins.Op&0x18 != SizeDW)
}
