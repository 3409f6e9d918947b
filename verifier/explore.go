package verifier

import (
	"github.com/bpfvm/bpfvm/isa"
)

// explore walks every path of the program depth first, the kernel's
// do_check: it follows the current state, pushes the other side of each
// undecided branch, and pops a pending branch when a path exits. It starts
// from v.cur at v.pc: the entry, or a global function (verifyGlobals).
func (v *verifier) explore() error {
	v.prevPC, v.segLast, v.nextPC, v.ret = -1, -1, v.pc, nil
	if v.log.level > 0 {
		v.log.printf("%d: %s\n", v.pc, v.stateString(v.cur, true))
	}
	// popped is the branch just taken from the queue, whose state the log
	// shows once the prune check has run, as the kernel's do_print_state.
	var popped *pending
	for {
		v.stats.Processed++
		if v.stats.Processed > MaxProcessed {
			return v.errorf(v.pc, "BPF program is too large. Processed %d insn", v.stats.Processed)
		}
		pc := v.pc
		ins := v.insns[pc]
		var done bool
		v.procPC, v.curEntry = pc, -1
		if v.hook != nil {
			v.hook(pc)
		}
		pruned, err := v.prune(pc)
		if err != nil {
			return err
		}
		if pruned {
			switch {
			case v.log.level > 0 && popped != nil:
				v.log.printf("\nfrom %d to %d%s: safe\n", popped.from, pc, specSuffix(v.cur))
			case v.log.level > 0:
				v.log.printf("%d: safe\n", pc)
			}
			done = true
		} else {
			if v.log.level > 0 && popped != nil {
				// Level 2 names the branch; both print its registers
				// (print_insn_state: all are scratched after a pop).
				if v.log.level&2 != 0 {
					v.log.printf("\nfrom %d to %d%s: %s\n", popped.from, pc, specSuffix(v.cur), v.stateString(v.cur, false))
				}
				v.log.printf("%d: %s\n", pc, v.stateString(v.cur, false))
			}
			spec := v.cur.speculative
			if !spec && !v.aux[pc].Seen {
				// Code reached only speculatively stays dead for
				// the rewrite (the kernel's sanitize_mark_insn_seen).
				v.aux[pc].Seen = true
				v.seen++
			}
			v.jmpCounted = v.jmpPoints[pc]
			if v.jmpCounted {
				v.jmpHist++
			}
			if v.log.level > 0 {
				v.log.insn(pc, v.insns)
			}
			if pc != v.nextPC && !v.opts.Unprivileged {
				v.appendHist(pc, 0) // reached by a jump
			}
			if spec && v.aux[pc].Nospec {
				// Behind a barrier: speculation stops here.
				done = true
			} else {
				var err error
				done, err = v.step(pc, ins)
				switch {
				case err != nil && spec && recoverable(err):
					// A speculative path may not get here: a
					// barrier before the instruction stops it, and
					// the path ends (the kernel's nospec error
					// recovery).
					v.aux[pc].Nospec = true
					v.aux[pc].ALUState = 0
					v.ret = nil
					done = true
				case err != nil:
					return err
				case spec && v.aux[pc].NospecResult:
					// A barrier after a store ends speculation.
					done = true
				}
			}
			if v.regInvariants && !done {
				if err := v.checkRegInvariants(pc); err != nil {
					return err
				}
			}
			if v.ret != nil {
				if err := v.takeReturn(pc); err != nil {
					return err
				}
			}
			v.prevPC, v.segLast, v.nextPC = pc, pc, pc+1
			if ins.IsLdImm64() {
				v.nextPC = pc + 2
			}
		}
		if v.log.level > 0 {
			v.log.closeInsn(v.touchedString(ins), v.nextPC)
		}
		popped = nil
		if !done {
			continue
		}
		// The path ended: continue with a pending branch.
		v.pathDone()
		if len(v.pending) == 0 {
			if v.log.level&2 == 0 {
				// A level-1 log keeps only what failed: none of an
				// accepted function (the kernel's do_check_common).
				v.log.reset(0)
			}
			return nil
		}
		p := v.pending[len(v.pending)-1]
		v.pending = v.pending[:len(v.pending)-1]
		v.release(v.cur)
		v.cur, v.pc = p.st, p.pc
		v.hist, v.jmpHist = v.hist[:p.histLen], p.jmpHist
		v.prevPC, v.segLast, v.nextPC = p.from, p.from, p.from+1
		if v.log.level&2 == 0 {
			// Only the path that fails stays in a level-1 log: back to
			// where this branch was queued, as the kernel's pop_stack.
			v.log.reset(p.logPos)
		}
		popped = &p
	}
}

// specSuffix marks a speculative path in the log, as the kernel.
func specSuffix(st *State) string {
	if st.speculative {
		return " (speculative execution)"
	}
	return ""
}

// push queues the state st to be explored from pc later.
func (v *verifier) push(st *State, from, pc int) error {
	if len(v.pending) >= maxPending {
		return v.errorf(from, "The sequence of %d jumps is too complex.", len(v.pending))
	}
	if st.parent != nil {
		st.parent.branches++
	}
	v.pending = append(v.pending, pending{st: st, pc: pc, from: from, histLen: len(v.hist), jmpHist: v.jmpHist, logPos: v.log.mark()})
	if len(v.pending) > v.stats.PendingBranchPeak {
		v.stats.PendingBranchPeak = len(v.pending)
	}
	return nil
}

// step verifies one instruction and moves v.pc. done is set when the path
// ended (exit from the entry function).
func (v *verifier) step(pc int, ins isa.Instruction) (done bool, err error) {
	// The kernel checks reserved fields on the paths it explores, first.
	if err := isa.CheckFields(ins); err != nil {
		return false, v.errorf(pc, "%v", err)
	}
	switch ins.Class() {
	case isa.ClassALU, isa.ClassALU64:
		err = v.checkALU(pc, ins)
		v.pc = pc + 1
	case isa.ClassLDX:
		err = v.checkLoad(pc, ins)
		v.pc = pc + 1
	case isa.ClassST, isa.ClassSTX:
		if ins.Op&0xe0 == isa.ModeATOMIC {
			err = v.checkAtomic(pc, ins)
		} else {
			err = v.checkStore(pc, ins)
		}
		v.pc = pc + 1
	case isa.ClassLD:
		if ins.IsLdImm64() {
			err = v.checkLdImm(pc, ins)
			v.pc = pc + 2
		} else {
			err = v.checkLdAbs(pc, ins)
			v.pc = pc + 1
		}
	case isa.ClassJMP, isa.ClassJMP32:
		v.jumps++
		return v.checkJump(pc, ins)
	}
	return false, err
}
