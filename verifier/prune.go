package verifier

import (
	"slices"

	"github.com/bpfvm/bpfvm/isa"
)

// State pruning: at prune points (jump targets, conditional jumps and the
// instructions after them, call returns) the verifier remembers the states
// it explored. A later state that every remembered one covers (each value it
// can hold, the remembered state could hold too) needs no exploration: the
// remembered state's paths, which are or will be fully explored, include
// all of its paths. Without back-edges a state cannot reach its own prune
// point again, so remembered states whose exploration is still in progress
// are sound to compare against.

// findPrunePoints marks where states are remembered.
func findPrunePoints(insns []isa.Instruction) []bool {
	pp := make([]bool, len(insns))
	for pc := 0; pc < len(insns); pc++ {
		ins := insns[pc]
		if t, ok := ins.JumpTarget(pc); ok {
			pp[t] = true
			if ins.Op != isa.OpJA && ins.Op != isa.OpJA32 {
				// The jump itself, as the kernel's visit_insn: one
				// check covers both ways out. And the fall-through, as
				// older kernels, where the comparison is learnt.
				pp[pc] = true
				if pc+1 < len(insns) {
					pp[pc+1] = true
				}
			}
		}
		if ins.Op == isa.OpCall && pc+1 < len(insns) {
			// After every call, helpers and kfuncs too, as the kernel's
			// visit_func_call_insn.
			pp[pc+1] = true
		}
		if ins.Op == isa.OpMayGoto || isIterNext(ins) {
			pp[pc] = true
		}
		if ins.IsLdImm64() {
			pc++
		}
	}
	return pp
}

// explored is a state remembered at a prune point.
type explored struct {
	st   *State
	hit  int
	miss int
	// branches counts the paths from this state still being explored;
	// while it is not zero, a state arriving at the same instruction
	// descends from this one: it went around a loop.
	branches int
	parent   *explored
	// evicted marks a state dropped from its instruction's list.
	evicted bool
	// pc is the instruction the state was remembered at, last the one
	// processed before it on its path since its parent (-1: none), and
	// histEnd the length of the instruction history then.
	pc, last, histEnd int
	// backedges are the loop hits against this state (backedge.go);
	// openFor are the loop heads with such a hit past this state whose
	// exploration has not finished: its marks are not final.
	backedges []*backedge
	openFor   []*explored
}

// pathDone accounts for the end of the current path in its ancestors.
func (v *verifier) pathDone() {
	for p := v.cur.parent; p != nil; p = p.parent {
		p.branches--
		if p.branches > 0 {
			break
		}
		if len(p.backedges) > 0 {
			v.closeLoop(p)
		}
		if p.evicted && len(p.openFor) == 0 {
			// Finished and forgotten: no path will compare with it or
			// walk through it again.
			v.release(p.st)
		}
	}
}

// pruneAgainst compares the current state at pc with the remembered state
// e: it reports whether e covers it, or an error for an infinite loop.
func (v *verifier) pruneAgainst(pc int, e *explored, mayGoto bool) (bool, error) {
	if isIterNext(v.insns[pc]) {
		return v.pruneIterNext(pc, e), nil
	}
	if e.branches > 0 && mayGoto && e.st.mayGotoDepth != v.cur.mayGotoDepth {
		// A loop through may_goto, which ends it at run time: it
		// converged once a round brings nothing new, and is made to
		// converge after some rounds by forgetting the scalars that keep
		// changing; the imprecise ones are widened every round at the
		// may_goto (jmp.go), as the kernel does, this catches the rest.
		if v.statesEqual(e.st, v.cur, pc, true) {
			e.hit++
			v.loopHit(e, pc)
			return true, nil
		}
		return false, nil
	}
	if e.branches > 0 {
		// An ancestor: the current state went around a loop.
		if v.callbackSites[pc] {
			// A helper call whose callback returned to it: the loop
			// converged when a round brings nothing new, all scalars
			// compared (the kernel's RANGE_WITHIN); the helper bounds
			// it. Nothing else is pruned against an ancestor here.
			if v.statesEqual(e.st, v.cur, pc, true) {
				e.hit++
				v.loopHit(e, pc)
				return true, nil
			}
			return false, nil
		}
		if e.st.callbackIter == v.cur.callbackIter && v.statesEqual(e.st, v.cur, pc, true) && v.statesEqual(v.cur, e.st, pc, true) && !iterDepthsDiffer(e.st, v.cur) && e.st.mayGotoDepth == v.cur.mayGotoDepth {
			return false, v.errorf(pc, "infinite loop detected at insn %d", pc)
		}
		return false, nil
	}
	if v.statesEqual(e.st, v.cur, pc, len(e.openFor) > 0) {
		e.hit++
		if len(e.openFor) > 0 {
			// e's marks are not final: compared exactly, and the path
			// keeps every scalar precise.
			if !v.opts.Unprivileged {
				v.markAllPrecise()
			}
			return true, nil
		}
		v.propagatePrecision(e.st, pc)
		return true, nil
	}
	return false, nil
}

// maxStatesPerInsn bounds remembered states per instruction; the kernel
// applies 64 to unprivileged programs.
const maxStatesPerInsnUnpriv = 64

// prune reports whether the current state at pc is covered by a remembered
// one; if not, it remembers a copy.
func (v *verifier) prune(pc int) (bool, error) {
	if !v.prunePoints[pc] {
		return false, nil
	}
	list := v.explored[pc]
	mayGoto := v.insns[pc].Op == isa.OpMayGoto
	loopHead := mayGoto || v.callbackSites[pc] || isIterNext(v.insns[pc])
	evicted, inLoop := false, false
	var (
		pruned bool
		err    error
	)
	for _, e := range list {
		inLoop = inLoop || e.branches > 0
		if pruned, err = v.pruneAgainst(pc, e, mayGoto); pruned || err != nil {
			// Those evicted before this one leave the list all the
			// same: marked, they could be freed while listed.
			break
		}
		// The kernel's heuristic: a state that keeps missing is unlikely
		// to help and only slows verification (a loop adds one per
		// round); forget it. Loop heads of callbacks and may_goto keep
		// their states longer, as they need them to converge.
		e.miss++
		n := 3
		if e.branches > 0 && loopHead {
			n = 64
		}
		if e.miss > e.hit*n+n {
			e.evicted, evicted = true, true
		}
	}
	if evicted {
		list = slices.DeleteFunc(list, func(e *explored) bool {
			if e.evicted {
				// Freed as soon as no descendant refers to it: the
				// count of states held drops now.
				v.states--
				v.stateBytes -= e.st.size()
				if e.branches == 0 && len(e.openFor) == 0 {
					v.release(e.st)
				}
			}
			return e.evicted
		})
		v.explored[pc] = list
	}
	if pruned || err != nil {
		return pruned, err
	}
	if v.opts.Unprivileged && len(list) >= maxStatesPerInsnUnpriv {
		return false, nil
	}
	// In a loop (an ancestor is remembered here), remember a state only
	// every few instructions and jumps, as the kernel does everywhere:
	// a tight loop would otherwise add one per round. Loops of callbacks
	// and may_goto need theirs to converge.
	if inLoop && !loopHead && (v.jumps-v.lastAddJumps < 2 || v.stats.Processed-v.lastAddInsns < 8) {
		return false, nil
	}
	v.lastAddJumps, v.lastAddInsns = v.jumps, v.stats.Processed
	e := &explored{st: v.cloneState(v.cur), branches: 1, parent: v.cur.parent, pc: pc, last: v.segLast, histEnd: len(v.hist)}
	v.cur.parent = e
	v.segLast = -1
	if !v.opts.Unprivileged {
		v.cur.forgetPrecision()
	}
	v.explored[pc] = append(list, e)
	v.states++
	v.stateBytes += e.st.size()
	v.stats.TotalStates++
	v.stats.PeakStates = max(v.stats.PeakStates, v.states)
	v.stats.PeakMemory = max(v.stats.PeakMemory, v.stateBytes)
	v.stats.MaxStatesPerInsn = max(v.stats.MaxStatesPerInsn, len(v.explored[pc]))
	return false, nil
}

// idMap checks that ids correspond one to one between two states.
type idMap struct {
	old, cur []uint32
	tmp      uint32
}

// checkScalar checks the ids linking scalars: an unlinked scalar in old
// covers a linked one, but a link in old needs the same link in cur, so an
// unlinked scalar in cur gets an id of its own, which no other register
// shares (the kernel's check_scalar_ids).
func (m *idMap) checkScalar(old, cur uint32) bool {
	if old == 0 {
		return true
	}
	if cur == 0 {
		m.tmp++
		cur = 1<<31 | m.tmp
	}
	return m.check(old, cur)
}

func (m *idMap) check(old, cur uint32) bool {
	if old == 0 && cur == 0 {
		return true
	}
	for i, o := range m.old {
		if o == old {
			return m.cur[i] == cur
		}
		if m.cur[i] == cur {
			return false
		}
	}
	m.old = append(m.old, old)
	m.cur = append(m.cur, cur)
	return true
}

// statesEqual reports whether old covers cur. With all set, imprecise
// scalars of old are compared too (loop heads, whose precision marks are
// not final yet, and infinite loop detection).
func (v *verifier) statesEqual(old, cur *State, pc int, all bool) bool {
	all = all || v.opts.Unprivileged || v.exact
	if len(old.Frames) != len(cur.Frames) || len(old.Refs) != len(cur.Refs) {
		return false
	}
	var ids idMap
	for i, of := range old.Frames {
		cf := cur.Frames[i]
		if of.CallSite != cf.CallSite || of.Subprog != cf.Subprog || of.CallbackDepth > cf.CallbackDepth {
			return false
		}
		live := v.liveAt(old, i, pc)
		for r := range of.Regs {
			if live&(1<<r) == 0 {
				continue // no path from here reads it
			}
			if !regsafe(&of.Regs[r], &cf.Regs[r], &ids, all) {
				return false
			}
		}
		if !v.stacksafe(of, cf, &ids, all, v.stackLiveAt(old, i, pc)) {
			return false
		}
	}
	for i := range old.Refs {
		if !ids.check(old.Refs[i].ID, cur.Refs[i].ID) || old.Refs[i].Lock != cur.Refs[i].Lock {
			return false
		}
	}
	return true
}

// regsafe reports whether old covers cur for one register (the kernel's
// regsafe). An imprecise scalar in old covers any scalar unless all is set.
func regsafe(old, cur *Reg, ids *idMap, all bool) bool {
	if old.Type == NotInit {
		// Nothing reads it on old's paths: any value is fine.
		return true
	}
	if old.Type != cur.Type || old.Flags != cur.Flags {
		return false
	}
	switch old.Type {
	case ScalarValue:
		if !old.Precise && !all {
			return true
		}
		if !within(cur.Scalar, old.Scalar) {
			return false
		}
		// Linked scalars: bounds learned on one apply to the others, so
		// the links must correspond, with the same offsets.
		if old.ID != 0 && (old.ID&linkDelta != cur.ID&linkDelta || old.linkOff() != cur.linkOff()) {
			return false
		}
		return ids.checkScalar(linkBase(old.ID), linkBase(cur.ID))
	case PtrToPacket, PtrToPacketMeta:
		if old.Off != cur.Off {
			return false
		}
		if old.Range < 0 || cur.Range < 0 {
			// At or beyond pkt_end decided comparisons on old's paths
			// (jmp.go): only the same mark covers.
			if old.Range != cur.Range {
				return false
			}
		} else if cur.Range < old.Range {
			return false
		}
	default:
		if old.Off != cur.Off || old.Map != cur.Map || old.MemSize != cur.MemSize || old.Frame != cur.Frame || old.Subprog != cur.Subprog || old.BTF != cur.BTF {
			return false
		}
	}
	if !within(cur.Scalar, old.Scalar) {
		return false
	}
	return ids.check(old.ID, cur.ID) && ids.check(old.RefID, cur.RefID)
}

// stacksafe compares the stacks of two frames.
func (v *verifier) stacksafe(old, cur *Frame, ids *idMap, all bool, live uint64) bool {
	for i := range old.Stack {
		if i < 64 && live&(1<<i) == 0 {
			continue // no path from here reads it
		}
		os := &old.Stack[i]
		var cs *Slot
		if i < len(cur.Stack) {
			cs = &cur.Stack[i]
		} else {
			cs = &Slot{}
		}
		first := 0
		if os.isSpill() {
			first = os.spillSize()
			if first == 8 && os.Spilled.Type == ScalarValue && v.allMisc(cs) {
				// Eight unknown bytes read back as an unbounded scalar:
				// a spilled scalar that covers one covers them (the
				// kernel's scalar_reg_for_stack). An array a loop wrote
				// through a variable offset meets its zero-filled self.
				unbound := unknownScalar()
				if !regsafe(&os.Spilled, &unbound, ids, all) {
					return false
				}
				continue
			}
			// The same spill (of the same size) must be there; bytes
			// past a narrow spill compare as bytes.
			if cs.spillSize() != first || !regsafe(&os.Spilled, &cs.Spilled, ids, all) {
				return false
			}
		}
		for b := first; b < len(os.Types); b++ {
			t, ct := os.Types[b], cs.Types[b]
			switch t {
			case StackInvalid:
				// Unprivileged paths never read such bytes. Privileged
				// ones read them as unknown scalars, which covers any
				// scalar but not a pointer.
				if !v.opts.Unprivileged && ct == StackSpill && cs.Spilled.Type != ScalarValue {
					return false
				}
			case StackMisc:
				if ct == StackInvalid {
					return false
				}
				if ct == StackSpill && cs.Spilled.Type != ScalarValue {
					return false
				}
			case StackZero:
				if ct != StackZero && !(ct == StackSpill && cs.Spilled.Type == ScalarValue && cs.Spilled.IsConst() && cs.Spilled.Const() == 0) {
					return false
				}
			case StackSpill:
				// Spill bytes only start a slot; a lone one cannot occur.
				return false
			case StackIter:
				if !iterSafe(os, cs, ids) {
					return false
				}
			}
		}
	}
	return true
}

// allMisc reports whether every byte of a slot is unknown data, which a
// load reads as an unbounded scalar: STACK_MISC, or never written where
// privileged programs may read uninitialised stack (the kernel's
// is_stack_all_misc).
func (v *verifier) allMisc(s *Slot) bool {
	for _, t := range s.Types {
		if t != StackMisc && (t != StackInvalid || v.opts.Unprivileged) {
			return false
		}
	}
	return true
}
