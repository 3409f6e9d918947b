package bpfvm

import (
	"slices"

	"bpfvm/vm"

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

// cancelPoint checks the run's context every 256 rounds of a helper's
// callback loop: each callback is a short run of its own, which the
// engines' checks (every 2^16 instructions on the interpreter, 2^20 on
// the JIT) never reach.
func cancelPoint(e *vm.Env, round uint64) error {
	if round%256 != 0 || e.Context == nil {
		return nil
	}
	select {
	case <-e.Context.Done():
		return e.Context.Err()
	default:
		return nil
	}
}
