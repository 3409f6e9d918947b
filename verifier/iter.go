package verifier

import (
	"fmt"

	"github.com/bpfvm/bpfvm/isa"
)

// Open-coded iterators (bpf_iter_num_*), as the kernel verifies them: the
// iterator lives in a stack slot that _new initialises (acquiring a
// reference, so that a path leaving it undestroyed is rejected), _next and
// _destroy require, and plain loads and stores cannot use as data.
//
// A loop around _next converges the kernel's way: each _next call forks a
// state where the iterator is drained (R0 = NULL, the loop ends) from one
// where it is active (R0 points at the next value, one level deeper); at a
// _next call, a state covered by any remembered one, even one whose paths
// are still being explored (an earlier round of the same loop), with the
// iterator active, is pruned, and imprecise scalars that changed since the
// previous round are widened so that such a cover is found after a few
// rounds (precise ones keep their values, as in the kernel).

// StackIter marks the bytes of a stack slot holding an iterator.
const StackIter = StackZero + 1

// Iterator states.
const (
	IterActive  uint8 = 1 // _next may return another value
	IterDrained uint8 = 2 // _next returned NULL
)

// IterSlot is the iterator held in a stack slot marked StackIter.
type IterSlot struct {
	// Ref is the reference _new acquired and _destroy releases.
	Ref uint32
	// State is IterActive or IterDrained.
	State uint8
	// Depth counts the _next calls that returned a value on this path;
	// state comparison ignores it.
	Depth uint32
}

// isIterNext reports whether ins calls bpf_iter_num_next.
func isIterNext(ins isa.Instruction) bool {
	return ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) && ins.Imm == isa.KfuncIterNumNext
}

// iterSlot returns the stack slot an iterator argument points at.
func (v *verifier) iterSlot(pc int, reg *Reg) (*Slot, error) {
	if reg.Type != PtrToStack {
		return nil, v.errorf(pc, "arg#0 expected pointer to an iterator on stack")
	}
	off := int64(reg.Off)
	if !reg.IsConst() {
		return nil, v.errorf(pc, "arg#0 expected pointer to an iterator on stack")
	}
	off += int64(reg.Const())
	if off%8 != 0 || off < -MaxStack || off > -8 {
		return nil, v.errorf(pc, "arg#0 expected pointer to an iterator on stack")
	}
	f := v.cur.frame(int(reg.Frame))
	v.noteStackDepth(f, int(-off))
	return f.slot(int(off)), nil
}

// initializedIter returns the iterator an argument of _next or _destroy
// points at, which _new must have initialised.
func (v *verifier) initializedIter(pc int, reg *Reg) (*Slot, error) {
	slot, err := v.iterSlot(pc, reg)
	if err != nil {
		return nil, err
	}
	if slot.Types[0] != StackIter {
		return nil, v.errorf(pc, "expected an initialized iter_num as arg #0")
	}
	return slot, nil
}

// iterNext forks at a _next call (the kernel's process_iter_next_call):
// the queued state has the iterator one level deeper and R0 pointing at
// the int it yields; the current one goes on with the iterator drained and
// R0 = NULL.
func (v *verifier) iterNext(pc int, slot *Slot) error {
	off := v.slotOffset(slot)
	if slot.Iter.State == IterActive {
		active := v.cur.clone()
		af := active.cur()
		as := active.frame(off.frame).slot(off.off)
		as.Iter.Depth++
		clearCallerSaved(af)
		af.Regs[0] = Reg{Type: PtrToMem, Flags: Rdonly, MemSize: 4, Scalar: Const(0)}
		if prev := v.prevLoopState(pc); prev != nil {
			widenImprecise(prev, active)
		}
		if err := v.push(active, pc, pc+1); err != nil {
			return err
		}
	}
	// The copy shares the frames: find the slot again, for writing.
	v.cur.frame(off.frame).slot(off.off).Iter.State = IterDrained
	f := v.cur.cur()
	clearCallerSaved(f)
	f.Regs[0] = constScalar(0)
	return nil
}

// slotRef locates a stack slot: its frame and offset.
type slotRef struct{ frame, off int }

// slotOffset finds where slot is in the current state.
func (v *verifier) slotOffset(slot *Slot) slotRef {
	for fi, fr := range v.cur.Frames {
		for i := range fr.Stack {
			if &fr.Stack[i] == slot {
				return slotRef{fi, -8 * (i + 1)}
			}
		}
	}
	return slotRef{}
}

// prevLoopState is the state of the previous round of the loop at pc (a
// _next call or a may_goto): the latest one remembered there whose paths
// are still being explored, other than the current visit's own.
func (v *verifier) prevLoopState(pc int) *State {
	list := v.explored[v.bucket(pc)]
	for i := len(list) - 1; i >= 0; i-- {
		e := list[i]
		if e.pc == pc && e.branches > 0 && e != v.cur.parent && sameCallSites(e.st, v.cur) {
			return e.st
		}
	}
	return nil
}

// prevCallbackRound is the state of the previous round of the callback
// loop at the helper call pc, where the current state returns from the
// callback: its nearest ancestor there in the same frames (the kernel's
// find_prev_entry).
func (v *verifier) prevCallbackRound(pc int) *State {
	for e := v.cur.parent; e != nil; e = e.parent {
		if e.pc == pc && e.branches > 0 && sameCallSites(e.st, v.cur) {
			return e.st
		}
	}
	return nil
}

func sameCallSites(a, b *State) bool {
	if len(a.Frames) != len(b.Frames) {
		return false
	}
	for i := range a.Frames {
		if a.Frames[i].CallSite != b.Frames[i].CallSite {
			return false
		}
	}
	return true
}

// pruneIterNext compares the current state at a _next call with a
// remembered one of an earlier round of the same loop, still being
// explored: covered, every scalar compared, with the iterator active, the
// current state adds nothing (the kernel's is_iter_next_insn case of
// is_state_visited).
func (v *verifier) pruneIterNext(pc int, e *explored) bool {
	if !v.statesEqual(e.st, v.cur, pc, true, -1) {
		return false
	}
	it := v.cur.cur().Regs[isa.R1]
	if it.Type != PtrToStack || !it.IsConst() {
		return false
	}
	off := int(it.Off) + int(int64(it.Const()))
	if off%8 != 0 || off < -MaxStack || off > -8 {
		return false
	}
	f := v.cur.Frames[it.Frame]
	if i := (-off - 1) / 8; i >= len(f.Stack) || f.Stack[i].Types[0] != StackIter || f.Stack[i].Iter.State != IterActive {
		return false
	}
	e.hit++
	// What e's paths need precise, this path needs too; an earlier
	// round's marks are not final yet (backedge.go).
	v.loopHit(e, pc)
	return true
}

// iterSafe compares the iterators of two slots marked StackIter, ignoring
// their depth.
func iterSafe(old, cur *Slot, ids *idMap) bool {
	return cur.Types[0] == StackIter && old.Iter.State == cur.Iter.State && ids.check(old.Iter.Ref, cur.Iter.Ref)
}

// iterDepthsDiffer reports whether two states hold an active iterator at
// different depths: a path that went round an iterator loop, which is not
// an infinite loop even if nothing else changed.
func iterDepthsDiffer(old, cur *State) bool {
	for fi, of := range old.Frames {
		if fi >= len(cur.Frames) {
			break
		}
		cf := cur.Frames[fi]
		for i := range of.Stack {
			if i >= len(cf.Stack) {
				break
			}
			os, cs := &of.Stack[i], &cf.Stack[i]
			if os.Types[0] == StackIter && cs.Types[0] == StackIter && os.Iter.State == IterActive && os.Iter.Depth != cs.Iter.Depth {
				return true
			}
		}
	}
	return false
}

// scrubIter turns a slot holding an iterator into unknown bytes, as a store
// over it does; its reference stays acquired, so the path fails at exit.
func scrubIter(s *Slot) {
	if s.Types[0] != StackIter {
		return
	}
	*s = Slot{}
	for i := range s.Types {
		s.Types[i] = StackMisc
	}
}

// noteLoopInline records at a bpf_loop call whether every path passes the
// same callback and flags 0, so that the rewrite may inline the loop as
// the kernel does (its inline_bpf_loop).
func (v *verifier) noteLoopInline(pc int, name string, sub int, caller *Frame) {
	aux := &v.aux[pc]
	flags := &caller.Regs[isa.R4]
	entry := v.subs[sub].Start + 1
	if name != "bpf_loop" || flags.Type != ScalarValue || !flags.IsConst() || flags.Const() != 0 || aux.LoopCallback != 0 && aux.LoopCallback != entry {
		aux.LoopNoInline = true
	}
	aux.LoopCallback = entry
}

// widenImprecise makes the scalars of cur that are imprecise in both
// states and differ from old's unknown (the kernel's
// widen_imprecise_scalars): pruning ignores their values anyway, and
// keeping them would make every round of an iterator loop look new.
//
// Equal means equal bounds and ids that correspond one to one across the
// two states (the kernel's regs_exact with one id map for the whole
// comparison): each round gives its values new ids, and a value that
// keeps its links from round to round has not changed. The frames are
// compared innermost first, as the kernel does, since the first ids seen
// fix the correspondence.
func widenImprecise(old, cur *State) {
	if len(old.Frames) != len(cur.Frames) {
		return
	}
	var ids idMap
	sameIDs := func(o, c uint32) bool {
		if (o == 0) != (c == 0) {
			return false
		}
		return o == 0 || ids.check(o, c)
	}
	maybe := func(o, c *Reg) {
		if o.Type != ScalarValue || c.Type != ScalarValue || o.Precise || c.Precise {
			return
		}
		if o.Scalar == c.Scalar && o.Off == c.Off && sameIDs(o.ID, c.ID) && sameIDs(o.RefID, c.RefID) {
			return
		}
		c.Scalar, c.ID, c.Off = Unknown(), 0, 0
	}
	for i := len(old.Frames) - 1; i >= 0; i-- {
		of, cf := old.Frames[i], cur.frame(i)
		for r := range cf.Regs {
			maybe(&of.Regs[r], &cf.Regs[r])
		}
		for j := range cf.Stack {
			if j < len(of.Stack) && of.Stack[j].isSpill() && cf.Stack[j].isSpill() {
				maybe(&of.Stack[j].Spilled, &cf.Stack[j].Spilled)
			}
		}
	}
}

// iterString prints an iterator slot as the kernel's log does:
// "iter_num(ref_id=1,state=active,depth=0)".
func iterString(s *Slot) string {
	state := "active"
	if s.Iter.State == IterDrained {
		state = "drained"
	}
	return fmt.Sprintf("iter_num(ref_id=%d,state=%s,depth=%d)", s.Iter.Ref, state, s.Iter.Depth)
}
