package verifier

import "github.com/bpfvm/bpfvm/isa"

// VerifyExact verifies comparing every scalar as precise and every stack
// slot as live, as the verifier did before precision tracking and stack
// liveness: what it rejects, Verify must not accept.
func VerifyExact(insns []isa.Instruction, opts Options) (*Result, error) {
	return verify(insns, opts, true, nil)
}

// VerifyHook verifies calling hook before each instruction is processed.
func VerifyHook(insns []isa.Instruction, opts Options, hook func(pc int)) (*Result, error) {
	return verify(insns, opts, false, hook)
}
