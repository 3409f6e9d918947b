package bpfvm

import (
	"slices"

	"bpfvm/isa"
	"bpfvm/rewrite"
	"bpfvm/verifier"
)

// expandMayGoto turns may_goto into the engines' timed form with its
// per-frame prologue (rewrite.ExpandMayGoto), for verified and unverified
// programs alike.
func (p *Program) expandMayGoto() error {
	if !slices.ContainsFunc(p.xlated, func(ins isa.Instruction) bool { return ins.Op == isa.OpMayGoto }) {
		return nil
	}
	budget := p.opts.MayGotoBudget
	if budget == 0 {
		budget = rewrite.DefaultMayGotoBudget
	}
	rp, err := rewrite.New(p.xlated, make([]verifier.InsnAux, len(p.xlated)))
	if err != nil {
		return err
	}
	if _, err := rewrite.ExpandMayGoto(rp, budget); err != nil {
		return err
	}
	p.xlated = rp.Insns
	return nil
}
