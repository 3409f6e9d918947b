package verifier

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/helper"
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

// IterSlot is the iterator held in a stack slot marked StackIter. An
// iterator of several slots (struct bpf_iter_<kind> is 8 bytes a slot)
// has the same IterSlot in each, the first (lowest) slot being the one
// its kfuncs point at.
type IterSlot struct {
	// Ref is the reference _new acquired and _destroy releases.
	Ref uint32
	// State is IterActive or IterDrained.
	State uint8
	// Depth counts the _next calls that returned a value on this path;
	// state comparison ignores it.
	Depth uint32
	// Kind is the iterator's kind, <kind> in its kfuncs' names
	// (bpf_iter_<kind>_new): "num", "bits", "task"...
	Kind string
	// Part is the slot's place in the iterator, 0 for the first.
	Part uint8
	// RCU marks an iterator of an RCU-protected kind (KF_RCU_PROTECTED)
	// made inside an RCU read section; Untrusted one whose section has
	// ended (bpf_rcu_read_unlock), which _next and _destroy refuse.
	RCU, Untrusted bool
}

// iterKinds are the open-coded iterators bpfvm knows, by kind, with the
// number of stack slots each takes (the size of struct bpf_iter_<kind>
// / 8, as the kernel's BTF gives them).
var iterKinds = map[string]int{"num": 1, "bits": 2, "task": 3, "task_vma": 1, "css": 3, "css_task": 1}

// iterKindOf is the kind of an iterator kfunc, bpf_iter_<kind>_new,
// _next or _destroy.
func iterKindOf(name string) string {
	name = strings.TrimPrefix(name, "bpf_iter_")
	for _, suffix := range []string{"_new", "_next", "_destroy"} {
		if k, ok := strings.CutSuffix(name, suffix); ok {
			return k
		}
	}
	return name
}

// isIterNext reports whether ins calls an iterator's _next kfunc.
func isIterNext(ins isa.Instruction) bool {
	if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallKfunc) {
		return false
	}
	if ins.Imm == isa.KfuncIterNumNext {
		return true
	}
	k := helper.LookupKfunc(ins.Imm)
	return k != nil && k.Flags&helper.KfIterNext != 0
}

// iterSlot returns the stack slot of the number iterator an argument of
// _new points at.
func (v *verifier) iterSlot(pc int, reg *Reg) (*Slot, error) {
	slots, err := v.iterSlots(pc, reg, 1, "expected uninitialized iter_num as arg #0")
	if err != nil {
		return nil, err
	}
	return slots[0], nil
}

// iterSlots returns the n stack slots of an iterator argument, the one
// it points at first. A pointer to the stack at a variable, misaligned
// or too high an offset fails with bad (the kernel's iter_get_spi
// failing makes the iterator neither initialised nor not).
func (v *verifier) iterSlots(pc int, reg *Reg, n int, bad string) ([]*Slot, error) {
	if reg.Type != PtrToStack {
		return nil, v.errorf(pc, "arg#0 expected pointer to an iterator on stack")
	}
	if !reg.IsConst() {
		return nil, v.errorf(pc, "%s", bad)
	}
	off := int64(reg.Off) + int64(reg.Const())
	if off%8 != 0 || off < -MaxStack || off > int64(-8*n) {
		return nil, v.errorf(pc, "%s", bad)
	}
	f := v.cur.frame(int(reg.Frame))
	v.noteStackDepth(f, int(-off))
	// The lowest slot first: it grows the stack to hold them all, so
	// that the pointers to the others stay valid.
	slots := make([]*Slot, n)
	for i := range n {
		slots[i] = f.slot(int(off) + 8*i)
	}
	return slots, nil
}

// initializedIter returns the iterator an argument of _next or _destroy
// points at, which _new must have initialised.
func (v *verifier) initializedIter(pc int, reg *Reg) (*Slot, error) {
	slots, err := v.initializedIterOf(pc, reg, "num", "")
	if err != nil {
		return nil, err
	}
	return slots[0], nil
}

// initializedIterOf returns the slots of an initialised iterator of kind
// an argument of the kfunc fname (_next, _destroy) points at, as the
// kernel's is_iter_reg_valid_init: every slot holds the same iterator of
// that kind, and one of an RCU section that has ended is refused.
func (v *verifier) initializedIterOf(pc int, reg *Reg, kind, fname string) ([]*Slot, error) {
	bad := fmt.Sprintf("expected an initialized iter_%s as arg #0", kind)
	slots, err := v.iterSlots(pc, reg, iterKinds[kind], bad)
	if err != nil {
		return nil, err
	}
	first := slots[0]
	for _, s := range slots {
		if s.Types[0] != StackIter || s.Iter.Ref != first.Iter.Ref || iterKind(s) != kind {
			return nil, v.errorf(pc, "%s", bad)
		}
	}
	if first.Iter.Untrusted {
		return nil, v.errorf(pc, "expected an RCU CS when using %s", fname)
	}
	return slots, nil
}

// iterKind is the kind of the iterator in a slot ("num" for the number
// iterator, which does not say).
func iterKind(s *Slot) string {
	if s.Iter.Kind == "" {
		return "num"
	}
	return s.Iter.Kind
}

// iterNext forks at a _next call (the kernel's process_iter_next_call):
// the queued state has the iterator one level deeper and R0 pointing at
// the int it yields; the current one goes on with the iterator drained and
// R0 = NULL.
func (v *verifier) iterNext(pc int, slot *Slot) error {
	return v.iterNextAs(pc, slot, 1, Reg{Type: PtrToMem, Flags: Rdonly, MemSize: 4, Scalar: Const(0)})
}

// iterNextAs is iterNext for an iterator of n slots whose _next gives r0
// (not NULL) while active.
func (v *verifier) iterNextAs(pc int, slot *Slot, n int, r0 Reg) error {
	off := v.slotOffset(slot)
	if slot.Iter.State == IterActive {
		active := v.cur.clone()
		af := active.cur()
		for i := range n {
			active.frame(off.frame).slot(off.off+8*i).Iter.Depth++
		}
		clearCallerSaved(af)
		af.Regs[0] = r0
		if prev := v.prevLoopState(pc); prev != nil {
			widenImprecise(prev, active)
		}
		if err := v.push(active, pc, pc+1); err != nil {
			return err
		}
	}
	// The copy shares the frames: find the slots again, for writing.
	for i := range n {
		v.cur.frame(off.frame).slot(off.off + 8*i).Iter.State = IterDrained
	}
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
	return cur.Types[0] == StackIter && old.Iter.State == cur.Iter.State && iterKind(old) == iterKind(cur) &&
		old.Iter.RCU == cur.Iter.RCU && old.Iter.Untrusted == cur.Iter.Untrusted && ids.check(old.Iter.Ref, cur.Iter.Ref)
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
	return fmt.Sprintf("iter_%s(ref_id=%d,state=%s,depth=%d)", iterKind(s), s.Iter.Ref, state, s.Iter.Depth)
}

// isIterKfunc reports whether k is an iterator's _new, _next or _destroy
// checked by the generic mechanism (iterArg): every kind but the number
// iterator, which keeps its own path (iterNumCall) and inlining.
func isIterKfunc(k *helper.Kfunc) bool {
	return k.Flags&(helper.KfIterNew|helper.KfIterNext|helper.KfIterDestroy) != 0 && iterKindOf(k.Name) != "num"
}

// inRCU reports whether the current path is in an RCU read section (the
// kernel's in_rcu_cs): inside bpf_rcu_read_lock or a spin lock, or
// anywhere in a program that does not sleep.
func (v *verifier) inRCU() bool {
	if v.cur.RCULock || !v.sleepable {
		return true
	}
	for _, r := range v.cur.Refs {
		if r.Lock != nil {
			return true
		}
	}
	return false
}

// iterArg checks the iterator argument of an iterator kfunc (the kernel's
// process_iter_arg): _new wants uninitialised slots, which it marks as an
// active iterator holding a new reference; _next and _destroy want an
// initialised iterator of their kind, which _destroy unmarks, releasing
// its reference.
func (v *verifier) iterArg(pc int, k *helper.Kfunc, reg *Reg, meta *kfuncMeta) error {
	kind := iterKindOf(k.Name)
	n, ok := iterKinds[kind]
	if !ok {
		return v.errorf(pc, "expected valid iter pointer as arg #0")
	}
	if k.Flags&helper.KfIterNew != 0 {
		if k.Name == "bpf_iter_css_task_new" && !v.cssTaskIterAllowed() {
			return v.errorf(pc, "css_task_iter is only allowed in bpf_lsm, bpf_iter and sleepable progs")
		}
		bad := fmt.Sprintf("expected uninitialized iter_%s as arg #0", kind)
		slots, err := v.iterSlots(pc, reg, n, bad)
		if err != nil {
			return err
		}
		for _, s := range slots {
			if s.Types[0] == StackIter {
				return v.errorf(pc, "%s", bad)
			}
		}
		it := IterSlot{Ref: v.newID(), State: IterActive, Kind: kind}
		if k.Flags&helper.KfRCUProtected != 0 {
			// MEM_RCU inside a section, else PTR_UNTRUSTED (the call
			// is then refused: kernel func ... requires RCU).
			it.RCU = v.inRCU()
			it.Untrusted = !it.RCU
		}
		v.cur.Refs = append(v.cur.Refs, Ref{ID: it.Ref, Insn: pc})
		for i, s := range slots {
			*s = Slot{Iter: it}
			s.Iter.Part = uint8(i)
			for j := range s.Types {
				s.Types[j] = StackIter
			}
		}
		meta.iter, meta.iterOK = v.slotOffset(slots[0]), true
		return nil
	}
	slots, err := v.initializedIterOf(pc, reg, kind, k.Name)
	if err != nil {
		return err
	}
	meta.iter, meta.iterOK = v.slotOffset(slots[0]), true
	if k.Flags&helper.KfIterDestroy != 0 {
		if !v.cur.releaseRef(slots[0].Iter.Ref) {
			return v.errorf(pc, "verifier internal error: iterator without a reference")
		}
		// releaseRef may have copied the frame: find the slots again.
		f := v.cur.frame(meta.iter.frame)
		for i := range n {
			*f.slot(meta.iter.off + 8*i) = Slot{}
		}
	}
	return nil
}

// cssTaskIterAllowed reports whether the program may walk a cgroup's
// tasks (the kernel's check_css_task_iter_allowlist): LSM programs,
// iterators and sleepable programs.
func (v *verifier) cssTaskIterAllowed() bool {
	return strings.HasPrefix(v.pt.Name, "lsm") || v.pt.Attach == ebpf.AttachTraceIter && v.pt.BTFArgs || v.sleepable
}

// iterKfuncDone ends the check of an iterator kfunc's call once its
// arguments are: R0 is _new's int, nothing after _destroy, and _next
// forks the drained path from the active one, where R0 points at what the
// iterator yields: an int (read-only memory of its size), or a kernel
// struct, trusted (RCU for an RCU-protected iterator).
func (v *verifier) iterKfuncDone(pc int, k *helper.Kfunc, proto *btf.FuncProto, at slotRef) error {
	f := v.cur.cur()
	if k.Flags&helper.KfIterNext == 0 {
		clearCallerSaved(f)
		f.Regs[0] = Reg{Type: NotInit}
		if k.Flags&helper.KfIterNew != 0 {
			f.Regs[0] = unknownScalar()
		}
		return nil
	}
	kind := iterKindOf(k.Name)
	slot := v.cur.frame(at.frame).slot(at.off)
	var r0 Reg
	p, ok := btf.UnderlyingType(proto.Return).(*btf.Pointer)
	if !ok {
		return v.errorf(pc, "kernel function %s returns an unsupported type", k.Name)
	}
	switch t := btf.UnderlyingType(p.Target); {
	case isStructType(t):
		st, err := v.kfuncStruct(t)
		if err != nil {
			return v.errorf(pc, "%v", err)
		}
		flags := Trusted
		if slot.Iter.RCU {
			flags = RCU
		}
		r0 = v.btfPtr(st, flags)
	default:
		size, err := btf.Sizeof(t)
		if err != nil || size <= 0 {
			return v.errorf(pc, "kernel function %s returns pointer type %s %s is not supported", k.Name, kindName(t), t.TypeName())
		}
		r0 = Reg{Type: PtrToMem, Flags: Rdonly, MemSize: uint32(size), Scalar: Const(0)}
	}
	return v.iterNextAs(pc, slot, iterKinds[kind], r0)
}

// untrustRCUIters turns the iterators of an ended RCU read section
// untrusted (bpf_rcu_read_unlock), as the kernel's MEM_RCU iterator slots.
func (v *verifier) untrustRCUIters() {
	for fi, f := range v.cur.Frames {
		for i := range f.Stack {
			if f.Stack[i].Types[0] != StackIter || !f.Stack[i].Iter.RCU {
				continue
			}
			s := &v.cur.frame(fi).Stack[i]
			s.Iter.RCU, s.Iter.Untrusted = false, true
		}
	}
}
