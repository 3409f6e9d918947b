package verifier

import (
	"github.com/bpfvm/bpfvm/isa"
)

// Register liveness, computed once before the walk by a backward dataflow
// pass over each function (what kernel 6.18 prints as "Live regs before
// insn"). A register that no path from an instruction reads before writing
// cannot affect safety from there on, so state comparison skips it: a state
// differing only in dead registers is covered. The kernel used to find this
// out during the walk by propagating read marks up the chain of states
// (seed 000's mark_reg_read); a static pass costs one sweep and nothing per
// state.

// regSet is a set of registers R0-R10, one bit each.
type regSet uint16

const (
	argRegs    regSet = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
	callerRegs regSet = 1<<0 | argRegs // clobbered or set by calls
	fpReg      regSet = 1 << 10
)

func reg(r isa.Register) regSet { return 1 << r }

// usesDefs returns the registers an instruction reads and writes.
func usesDefs(ins isa.Instruction) (use, def regSet) {
	x := ins.Op&isa.SrcX != 0
	switch ins.Class() {
	case isa.ClassALU, isa.ClassALU64:
		op := ins.Op & 0xf0
		switch {
		case op == isa.ALUMov:
			if x {
				use = reg(ins.Src)
			}
		case op == isa.ALUNeg || op == isa.ALUEnd:
			use = reg(ins.Dst)
		default:
			use = reg(ins.Dst)
			if x {
				use |= reg(ins.Src)
			}
		}
		def = reg(ins.Dst)
	case isa.ClassLDX:
		use, def = reg(ins.Src), reg(ins.Dst)
	case isa.ClassST:
		use = reg(ins.Dst)
	case isa.ClassSTX:
		use = reg(ins.Dst) | reg(ins.Src)
		if ins.Op&0xe0 == isa.ModeATOMIC {
			switch {
			case ins.Imm == isa.AtomicLoadAcquire:
				use, def = reg(ins.Src), reg(ins.Dst)
			case ins.Imm == isa.AtomicStoreRelease:
			case ins.Imm == isa.AtomicCmpXchg:
				use |= reg(isa.R0)
				def = reg(isa.R0)
			case ins.Imm&isa.AtomicFetch != 0:
				def = reg(ins.Src)
			}
		}
	case isa.ClassLD:
		if ins.IsLdImm64() {
			def = reg(ins.Dst)
			break
		}
		// LD_ABS/LD_IND read the context from R6 and clobber R0-R5.
		use = reg(isa.R6)
		if ins.Op&0xe0 == isa.ModeIND {
			use |= reg(ins.Src)
		}
		def = callerRegs
	case isa.ClassJMP, isa.ClassJMP32:
		switch {
		case ins.Op == isa.OpExit:
			use = reg(isa.R0)
		case ins.Op == isa.OpCall:
			use, def = argRegs, callerRegs
		case ins.Op == isa.OpCallX:
			use, def = argRegs|reg(ins.Dst), callerRegs
		case ins.Op&0xf0 == isa.JumpA || ins.Op == isa.OpMayGoto:
		default:
			use = reg(ins.Dst)
			if x {
				use |= reg(ins.Src)
			}
		}
	}
	return use | fpReg, def
}

// computeLiveness returns, for every instruction, the registers live before
// it. Calls read the argument registers args gives and set R0-R5; exits
// read R0. Sweeps from the end reach the fixpoint (one sweep and a check
// when every edge goes forward).
func computeLiveness(insns []isa.Instruction, args func(isa.Instruction) regSet) []regSet {
	n := len(insns)
	live := make([]regSet, n)
	for changed := true; changed; {
		changed = false
		for pc := n - 1; pc >= 0; pc-- {
			var out regSet
			a, b := successors(insns, pc)
			if a >= 0 {
				out = live[a]
			}
			if b >= 0 {
				out |= live[b]
			}
			use, def := usesDefs(insns[pc])
			if insns[pc].Op == isa.OpCall {
				use = args(insns[pc]) | fpReg
			}
			if in := use | out&^def; in != live[pc] {
				live[pc] = in
				changed = true
			}
		}
	}
	return live
}

// liveAt returns the registers of frame i of st that matter: for the frame
// being verified those live at pc, for callers those live where they
// resume.
func (v *verifier) liveAt(st *State, i, pc int) regSet {
	if v.live == nil {
		v.live = computeLiveness(v.insns, v.callArgs) // at the first comparison
	}
	if i == len(st.Frames)-1 {
		return v.live[pc]
	}
	callee := st.Frames[i+1]
	if callee.Callback {
		return v.live[callee.CallSite] // back to the helper call
	}
	return v.live[callee.CallSite+1]
}

// stackLiveAt returns the slots of frame i of st that matter: those live at
// pc for the frame being verified, all for callers (a callee may reach
// their stacks through pointers). doneAt is, for a remembered state whose
// paths have all been explored (no branch pending, no loop open past it),
// v.seen when they were (explored.doneAt); -1 for any other state.
//
// A state still being explored gets the liveness of the whole program.
// A finished one gets that of the instructions verification has reached
// (Aux.Seen), as the kernel's stack liveness (kernel/bpf/liveness.c)
// accumulates reads and writes only at the instructions the walk visits
// and cleans a state only once its paths are done: every path from it
// has been walked, so every instruction a run from it may execute is
// among them, and code a constant decides against (Cilium's .rodata
// configuration) reads nothing. It is computed again when a state
// finished after the last computation, over more instructions.
//
// Unprivileged programs keep the whole program's liveness: their
// speculative paths reach code that Aux.Seen leaves out (the rewrite
// must treat it as dead), yet a pruned state's speculative paths would
// read it.
func (v *verifier) stackLiveAt(st *State, i, pc, doneAt int) uint64 {
	if v.exact || i != len(st.Frames)-1 {
		return ^uint64(0)
	}
	if doneAt >= 0 && !v.opts.Unprivileged {
		if v.stackLiveSeen == nil || v.stackLiveSeenAt < doneAt {
			v.stackLiveSeen = computeStackLiveness(v.insns, v.subs, v.callbackSites, v.callArgs, v.proto, v.mapSizes, func(pc int) bool { return v.aux[pc].Seen })
			v.stackLiveSeenAt = v.seen
			v.stats.LivenessPasses++
		}
		return v.stackLiveSeen[pc]
	}
	if v.stackLive == nil {
		// Computed at the first comparison: programs without prune
		// points never need it.
		v.stackLive = computeStackLiveness(v.insns, v.subs, v.callbackSites, v.callArgs, v.proto, v.mapSizes, nil)
	}
	return v.stackLive[pc]
}

// mapSizes returns the key and value sizes of the program's map of index
// idx, for the stack liveness of map helpers' key and value arguments.
func (v *verifier) mapSizes(idx int64) (key, value int, ok bool) {
	if idx < 0 || idx >= int64(len(v.opts.Maps)) {
		return 0, 0, false
	}
	sp := v.opts.Maps[idx].Spec
	return int(sp.KeySize), int(sp.ValueSize), true
}

// callArgs returns the argument registers a call passes: for a helper or a
// kernel function those its prototype declares, as the kernel's
// get_call_summary counts them; R1-R5 for the others. Verification checks
// no register past them (bpf_trace_printk's R3-R5 are passed on as they
// are), so their values cannot matter for safety: a state differing there
// is covered.
func (v *verifier) callArgs(ins isa.Instruction) regSet {
	n := 5
	switch uint8(ins.Src) {
	case isa.CallHelper:
		p := v.proto(ins.Imm)
		if p == nil {
			break // rejected at the call
		}
		n = 0
		for n < len(p.Args) && p.Args[n] != ArgNone {
			n++
		}
	case isa.CallKfunc:
		switch ins.Imm {
		case isa.KfuncIterNumNew:
			n = 3
		case isa.KfuncIterNumNext, isa.KfuncIterNumDestroy:
			n = 1
		}
	}
	return argRegs & (1<<(n+1) - 1)
}
