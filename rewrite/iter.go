package rewrite

import (
	"github.com/bpfvm/bpfvm/isa"
)

// InlineIterNext replaces calls of bpf_iter_num_next with
// isa.OpIterNumNext, the function as one instruction both engines run
// natively (the JIT as six machine instructions), so that a bpf_for loop
// pays no call per round; the kernel calls the function. The engines keep
// the iterator as the kfunc does (struct bpf_iter_num_kern { int cur; int
// end; }, see kfuncs.go). It returns the number of calls replaced.
func InlineIterNext(p *Program) int {
	n := 0
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := &p.Insns[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) && ins.Imm == isa.KfuncIterNumNext {
			*ins = isa.Instruction{Op: isa.OpIterNumNext, Dst: isa.R0, Src: isa.R1, Imm: isa.KfuncIterNumNext}
			n++
		}
	}
	return n
}
