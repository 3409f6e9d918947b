package verifier

import (
	"slices"

	"github.com/bpfvm/bpfvm/isa"
)

// State pruning: at prune points (jump targets, conditional jumps, call
// returns, function entries) the verifier compares the current state with
// the states it remembered there, and remembers it if none covers it and
// 2 jumps and 8 instructions went by since the last one (the kernel's
// is_state_visited, whose state counts bpfvm matches). A later state that every remembered one covers (each value it
// can hold, the remembered state could hold too) needs no exploration: the
// remembered state's paths, which are or will be fully explored, include
// all of its paths. Without back-edges a state cannot reach its own prune
// point again, so remembered states whose exploration is still in progress
// are sound to compare against.

// findPrunePoints marks where states are remembered (prune points) and
// where the kernel records an entry in a path's jump history (jump points),
// as its visit_insn does: the targets of jumps, conditional jumps
// themselves (one check covers both ways out), the instruction after a
// call, and bpf-to-bpf calls and callback addresses with the function they
// enter. Helper calls that take a callback are added by the caller.
func findPrunePoints(insns []isa.Instruction) (prune, jump []bool) {
	prune, jump = make([]bool, len(insns)), make([]bool, len(insns))
	mark := func(pc int, jmp bool) {
		if pc >= 0 && pc < len(insns) {
			prune[pc] = true
			jump[pc] = jump[pc] || jmp
		}
	}
	for pc := 0; pc < len(insns); pc++ {
		ins := insns[pc]
		size := 1
		if ins.IsLdImm64() {
			size = 2
		}
		if t, ok := ins.JumpTarget(pc); ok {
			mark(t, true)
			if ins.Op != isa.OpJA && ins.Op != isa.OpJA32 {
				mark(pc, false)
			}
		}
		if ins.Op == isa.OpCall || ins.IsPseudoFunc() {
			// Returns from a function come back here: a jump.
			mark(pc+size, true)
		}
		if ins.IsLocalCall() || ins.IsPseudoFunc() {
			mark(pc, false)
			mark(pc+1+int(ins.Imm), true)
		}
		if ins.Op == isa.OpMayGoto || isIterNext(ins) {
			mark(pc, false)
		}
		pc += size - 1
	}
	return prune, jump
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
	// doneAt is v.seen when the last of branches and openFor went: every
	// path from the state had been walked then (stackLiveAt).
	doneAt int
}

// pathDone accounts for the end of the current path in its ancestors.
func (v *verifier) pathDone() {
	for p := v.cur.parent; p != nil; p = p.parent {
		p.branches--
		if p.branches > 0 {
			break
		}
		p.doneAt = v.seen
		if len(p.backedges) > 0 {
			v.closeLoop(p)
		}
		if p.evicted && len(p.openFor) == 0 {
			// Finished and forgotten: no path will compare with it or
			// walk through it again.
			v.freeExplored(p)
		}
	}
}

// pruneAgainst compares the current state at pc with the remembered state
// e: it reports whether e covers it, or an error for an infinite loop.
func (v *verifier) pruneAgainst(pc int, e *explored, mayGoto bool) (bool, error) {
	if isIterNext(v.insns[pc]) && e.branches > 0 {
		// An earlier round of the iterator loop; a state whose paths
		// are all explored covers as at any prune point.
		return v.pruneIterNext(pc, e), nil
	}
	if e.branches > 0 && mayGoto && e.st.mayGotoDepth != v.cur.mayGotoDepth {
		// A loop through may_goto, which ends it at run time: it
		// converged once a round brings nothing new, and is made to
		// converge after some rounds by forgetting the scalars that keep
		// changing; the imprecise ones are widened every round at the
		// may_goto (jmp.go), as the kernel does, this catches the rest.
		if v.statesEqual(e.st, v.cur, pc, true, -1) {
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
			if v.statesEqual(e.st, v.cur, pc, true, -1) {
				e.hit++
				v.loopHit(e, pc)
				return true, nil
			}
			return false, nil
		}
		if e.st.callbackIter == v.cur.callbackIter && v.statesEqual(e.st, v.cur, pc, true, -1) && v.statesEqual(v.cur, e.st, pc, true, -1) && !iterDepthsDiffer(e.st, v.cur) && e.st.mayGotoDepth == v.cur.mayGotoDepth {
			return false, v.errorf(pc, "infinite loop detected at insn %d", pc)
		}
		return false, nil
	}
	doneAt := e.doneAt
	if len(e.openFor) > 0 {
		doneAt = -1
	}
	if v.statesEqual(e.st, v.cur, pc, len(e.openFor) > 0, doneAt) {
		e.hit++
		if len(e.openFor) > 0 {
			// e's marks are not final: compared exactly, and traced
			// again along this path when they are (backedge.go).
			v.openHit(e, pc)
			return true, nil
		}
		v.propagatePrecision(e.st, pc)
		return true, nil
	}
	return false, nil
}

// maxStatesPerInsnUnpriv bounds the states compared at an instruction
// before a new one is no longer remembered there; the kernel applies it
// (BPF_COMPLEXITY_LIMIT_STATES) to unprivileged programs.
const maxStatesPerInsnUnpriv = 64

// bucket is the list of remembered states the current state at pc is
// compared with: the kernel hashes the instruction and the call site of
// the current frame into as many lists as the program has instructions
// (explored_state). States of other call sites of the same function stay
// apart, so that one still being explored is not taken for a loop.
func (v *verifier) bucket(pc int) int {
	site := v.cur.top().CallSite
	return int(uint32(int32(pc)^int32(site)) % uint32(len(v.explored)))
}

// prune reports whether the current state at pc is covered by a remembered
// one; if not, it may remember a copy (the kernel's is_state_visited).
func (v *verifier) prune(pc int) (bool, error) {
	if !v.prunePoints[pc] {
		return false, nil
	}
	mayGoto := v.insns[pc].Op == isa.OpMayGoto
	// Loop heads of callbacks, iterators and may_goto always get a state
	// (the kernel's force checkpoints): their loops converge against
	// them. So does every prune point with BPF_F_TEST_STATE_FREQ, and a
	// path whose jump history grew long.
	loopHead := mayGoto || v.callbackSites[pc] || isIterNext(v.insns[pc])
	force := loopHead || v.stateFreq || v.jmpHist > maxJmpHist
	// A state is remembered only every 2 jumps and 8 instructions: most
	// prune points are a few instructions apart, and states remembered
	// that often mostly cost memory and comparisons.
	add := force || v.jumps-v.lastAddJumps >= 2 && v.stats.Processed-v.lastAddInsns >= 8
	b := v.bucket(pc)
	list := v.explored[b]
	n, evicted := 0, false
	var (
		pruned bool
		err    error
	)
	// Newest first, as the kernel's lists.
	for i := len(list) - 1; i >= 0; i-- {
		e := list[i]
		n++
		if e.pc != pc {
			continue // another instruction in the same list
		}
		if pruned, err = v.pruneAgainst(pc, e, mayGoto); pruned || err != nil {
			// Those evicted before this one leave the list all the
			// same: marked, they could be freed while listed.
			break
		}
		if e.branches > 0 && !force && v.jumps-v.lastAddJumps < 20 && v.stats.Processed-v.lastAddInsns < 100 {
			// In a loop (an ancestor is remembered here): rounds
			// differ and rarely prune each other, so remember one
			// only every 20 jumps or 100 instructions.
			add = false
		}
		// The kernel's heuristic: a state that keeps missing is unlikely
		// to help and only slows verification; forget it. A miss counts
		// only when a state is going to be remembered, so that loop
		// rounds do not evict the ones before them. Force checkpoints
		// keep the states they converge against longer.
		if add {
			e.miss++
		}
		limit := 3
		if e.branches > 0 && loopHead {
			limit = 64
		}
		if e.miss > e.hit*limit+limit {
			e.evicted, evicted = true, true
		}
	}
	if evicted {
		list = slices.DeleteFunc(list, func(e *explored) bool {
			if e.evicted && e.branches == 0 && len(e.openFor) == 0 {
				// Freed as soon as no descendant refers to it.
				v.freeExplored(e)
			}
			return e.evicted
		})
		v.explored[b] = list
	}
	if pruned || err != nil {
		return pruned, err
	}
	v.stats.MaxStatesPerInsn = max(v.stats.MaxStatesPerInsn, n)
	if v.opts.Unprivileged && n > maxStatesPerInsnUnpriv || !add {
		return false, nil
	}
	v.lastAddJumps, v.lastAddInsns, v.jmpHist = v.jumps, v.stats.Processed, 0
	e := &explored{st: v.cloneState(v.cur), branches: 1, parent: v.cur.parent, pc: pc, last: v.segLast, histEnd: len(v.hist)}
	v.cur.parent = e
	v.segLast = -1
	if !v.opts.Unprivileged {
		v.cur.forgetPrecision()
	}
	v.explored[b] = append(list, e)
	v.states++
	v.stateBytes += e.st.size()
	v.stats.TotalStates++
	v.stats.PeakStates = max(v.stats.PeakStates, v.states)
	v.stats.PeakMemory = max(v.stats.PeakMemory, v.stateBytes)
	return false, nil
}

// maxJmpHist is how long a path's jump history may grow before a state is
// remembered whatever the heuristics say (the kernel's bound of 40).
const maxJmpHist = 40

// freeExplored drops a remembered state that left its list and that no
// path will compare with or walk through again.
func (v *verifier) freeExplored(e *explored) {
	v.states--
	v.stateBytes -= e.st.size()
	v.release(e.st)
}

// idMap checks that ids correspond one to one between two states.
type idMap struct {
	old, cur []uint32
	tmp      uint32
	// exact makes scalars cover only equal ones (explore_alu_limits).
	exact bool
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
// not final yet, and infinite loop detection). doneAt says whether old is
// a remembered state whose paths are all explored (stackLiveAt).
func (v *verifier) statesEqual(old, cur *State, pc int, all bool, doneAt int) bool {
	all = all || v.opts.Unprivileged || v.exact
	if old.speculative && !cur.speculative {
		// A speculative path's state never covers a real one.
		return false
	}
	if len(old.Frames) != len(cur.Frames) || len(old.Refs) != len(cur.Refs) || old.RCULock != cur.RCULock || old.PreemptDepth != cur.PreemptDepth {
		return false
	}
	ids := idMap{exact: v.exploreALULimits}
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
		if !v.stacksafe(of, cf, &ids, all, v.stackLiveAt(old, i, pc, doneAt)) {
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
		if ids.exact {
			// Masking limits depend on the exact bounds.
			if old.Scalar != cur.Scalar {
				return false
			}
		} else if !old.Precise && !all {
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
	return old.DynptrKind == cur.DynptrKind && ids.check(old.ID, cur.ID) && ids.check(old.RefID, cur.RefID) && ids.check(old.Dynptr, cur.Dynptr)
}

// stacksafe reports whether the slots of old in live cover those of cur
// (the kernel's stacksafe), byte by byte from a slot's top (the kernel's
// slot_type order: our Types[7-k] is its slot_type[k]):
//   - a byte old never wrote covers any, and so does an unknown one when
//     the program is privileged (allow_uninit_stack: it may read
//     uninitialised stack, as unknown bytes);
//   - a whole slot that is an 8-byte spilled scalar or reads as an
//     unbounded scalar (unknown bytes, or never written ones when
//     privileged) compares with such a slot as registers do
//     (scalar_reg_for_stack): an imprecise spilled scalar covers unknown
//     bytes, unknown bytes cover a spilled scalar;
//   - else the types must be equal (unknown covers zero), and spills,
//     iterators and dynptrs compare whole.
//
// A 4-byte spill compares with unknown bytes as bytes, as in 6.18 (later
// kernels compare half slots as registers too).
//
// bpfvm is stricter than the kernel in one place: a spilled pointer in
// cur is not covered by bytes old never wrote or knew nothing of (the
// kernel lets a privileged old state's unknown scalar cover it), and
// more permissive in one: zero bytes in old cover a spilled constant 0.
func (v *verifier) stacksafe(old, cur *Frame, ids *idMap, all bool, live uint64) bool {
	var beyond Slot
	for i := range old.Stack {
		if i < 64 && live&(1<<i) == 0 {
			continue // no path from here reads it
		}
		os := &old.Stack[i]
		cs, in := &beyond, i < len(cur.Stack)
		if in {
			cs = &cur.Stack[i]
		}
		if !v.slotSafe(os, cs, in, ids, all) {
			return false
		}
	}
	return true
}

// slotSafe compares one slot for stacksafe; in says cur's stack reaches
// it.
func (v *verifier) slotSafe(os, cs *Slot, in bool, ids *idMap, all bool) bool {
	priv := !v.opts.Unprivileged
	ptrSpill := cs.isSpill() && cs.Spilled.Type != ScalarValue
	for k := 0; k < 8; k++ {
		b := 7 - k
		ot := os.Types[b]
		if ot == StackInvalid || priv && ot == StackMisc {
			if priv && ptrSpill && in {
				return false
			}
			continue
		}
		if !in {
			return false // used, and not in cur's stack
		}
		if k == 0 {
			or, cr := v.scalarAfter(os), v.scalarAfter(cs)
			if or != nil && cr != nil {
				if !regsafe(or, cr, ids, all) {
					return false
				}
				break // the rest of the slot is the register's
			}
		}
		ct := cs.Types[b]
		switch {
		case ot == StackMisc && ct == StackZero:
			continue
		case ot == StackZero && ct == StackSpill && cs.Spilled.Type == ScalarValue && cs.Spilled.IsConst() && cs.Spilled.Const() == 0:
			continue
		case ot != ct:
			return false
		case k != 7:
			continue
		}
		switch ot {
		case StackSpill:
			if cs.spillSize() != os.spillSize() || !regsafe(&os.Spilled, &cs.Spilled, ids, all) {
				return false
			}
		case StackIter:
			if !iterSafe(os, cs, ids) {
				return false
			}
		case StackDynptr:
			if !dynptrSafe(os, cs, ids) {
				return false
			}
		}
	}
	return true
}

// scalarAfter is the scalar the whole slot s reads as, if it reads as
// one: an 8-byte spilled scalar, or an unbounded one for unknown bytes
// (and never written ones when privileged); nil otherwise (the kernel's
// scalar_reg_for_stack).
func (v *verifier) scalarAfter(s *Slot) *Reg {
	if s.spillSize() == 8 && s.Spilled.Type == ScalarValue {
		return &s.Spilled
	}
	if !v.allMisc(s) {
		return nil
	}
	u := unknownScalar()
	return &u
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
