package verifier

import (
	"github.com/bpfvm/bpfvm/isa"
)

// Precision tracking (the kernel's mark_chunk_precise and backtrack_insn).
// Scalars start imprecise: a remembered state whose scalar is imprecise
// covers any scalar there, because nothing on its explored paths depended
// on the value. When a value does matter (a branch decided by it, a helper
// size, pointer arithmetic, a return value range, a constant map key), the
// instructions that produced it are walked backwards over the instruction
// history of the current path, and the registers and stack slots it came
// from are marked precise in every remembered state on the way, up the
// chain of parents, until the sources are constants or already precise.
//
// The history is one slice shared by the whole depth-first walk (seed
// 001): it holds the current path only. A remembered state records where
// its part ends; a queued branch records the length at the branch, and
// popping the branch truncates the slice to it. An entry is recorded for
// an instruction reached by a jump (where it came from) and for a stack
// access at a fixed offset (which frame and slot), which is how spills and
// fills are followed.

// histEntry is one entry of the instruction history.
type histEntry struct {
	idx, prev int32 // the instruction and the one processed before it
	flags     uint32
}

// History flags: a stack access of one slot, its frame and slot index.
const (
	histStack      = 1 << 31
	histFrameShift = 8
)

func stackFlags(frame, spi int) uint32 {
	return histStack | uint32(frame)<<histFrameShift | uint32(spi)
}

// appendHist records an entry for the instruction being processed.
func (v *verifier) appendHist(pc int, flags uint32) {
	c := cap(v.hist)
	v.hist = append(v.hist, histEntry{idx: int32(pc), prev: int32(v.prevPC), flags: flags})
	if cap(v.hist) != c {
		v.stats.HistoryAllocs++
	}
	v.curEntry = len(v.hist) - 1
	v.stats.HistoryEntries++
	v.stats.HistoryPeak = max(v.stats.HistoryPeak, len(v.hist))
}

// noteStackAccess records that the instruction being processed accessed a
// stack slot at a fixed offset.
func (v *verifier) noteStackAccess(pc, frame, spi int) {
	if !v.jmpCounted {
		v.jmpHist++ // an entry of its own in the kernel's history too
		v.jmpCounted = true
	}
	if v.opts.Unprivileged {
		return
	}
	if v.curEntry >= 0 {
		v.hist[v.curEntry].flags = stackFlags(frame, spi)
		return
	}
	v.appendHist(pc, stackFlags(frame, spi))
}

// btMasks are the registers and stack slots, per frame, whose values are
// being traced backwards.
type btMasks struct {
	frame int // the frame of the instruction being walked
	regs  [MaxCallFrames]regSet
	slots [MaxCallFrames]uint64
}

func (b *btMasks) empty() bool {
	for i := range b.regs {
		if b.regs[i] != 0 || b.slots[i] != 0 {
			return false
		}
	}
	return true
}

func (b *btMasks) isReg(r isa.Register) bool { return b.regs[b.frame]&(1<<r) != 0 }
func (b *btMasks) setReg(r isa.Register)     { b.regs[b.frame] |= 1 << r }
func (b *btMasks) clearReg(r isa.Register)   { b.regs[b.frame] &^= 1 << r }

// intoCallee walks back from a caller, at the instruction after a call,
// into the callee that returned there without an exit (queueReturn): the
// caller's R0 came from nowhere to trace, its R1-R5 were clobbered by the
// call, and nothing of the callee's frame is traced yet.
func (b *btMasks) intoCallee() bool {
	b.regs[b.frame] &^= callerRegs
	b.frame++
	if b.frame >= MaxCallFrames {
		return false
	}
	b.regs[b.frame], b.slots[b.frame] = 0, 0
	return true
}

// markRegPrecise marks register r of the current frame precise: its value
// at the instruction being processed matters.
func (v *verifier) markRegPrecise(r isa.Register) {
	if v.opts.Unprivileged {
		return
	}
	if reg := &v.cur.cur().Regs[r]; reg.Type != ScalarValue {
		return
	}
	b := btMasks{frame: len(v.cur.Frames) - 1}
	b.setReg(r)
	v.backtrack(&b)
}

// markSlotPrecise marks a stack slot precise (a constant map key).
func (v *verifier) markSlotPrecise(frame, spi int) {
	if v.opts.Unprivileged {
		return
	}
	b := btMasks{frame: len(v.cur.Frames) - 1}
	b.slots[frame] |= 1 << spi
	v.backtrack(&b)
}

// propagatePrecision is called when old covered the current state at pc:
// what old's paths needed precise, the current path needs too.
func (v *verifier) propagatePrecision(old *State, pc int) {
	if v.opts.Unprivileged {
		return
	}
	b := precMasks(v, old, pc, len(v.cur.Frames)-1)
	if !b.empty() {
		v.backtrack(&b)
	}
}

// precMasks are the live precise scalars of old at pc, to be traced from
// an instruction in frame.
func precMasks(v *verifier, old *State, pc, frame int) btMasks {
	b := btMasks{frame: frame}
	for i, f := range old.Frames {
		live := v.liveAt(old, i, pc)
		for r := range f.Regs {
			if reg := &f.Regs[r]; live&(1<<r) != 0 && reg.Type == ScalarValue && reg.Precise {
				b.regs[i] |= 1 << r
			}
		}
		for s := range f.Stack {
			if sl := &f.Stack[s]; sl.isSpill() && sl.Spilled.Type == ScalarValue && sl.Spilled.Precise {
				b.slots[i] |= 1 << s
			}
		}
	}
	return b
}

// segment is the part of the current path between a remembered state and
// the next one (or the current instruction): instructions first..last
// (last < 0: none) and their history entries hist[start:end].
type segment struct {
	first, last, start, end int
	next                    int // the instruction processed after last
}

// curSegment is the segment of the current state.
func (v *verifier) curSegment() segment {
	s := segment{last: v.segLast, end: len(v.hist), next: v.procPC}
	if v.curEntry >= 0 {
		s.end = v.curEntry // the instruction being processed is not part of it yet
	}
	if p := v.cur.parent; p != nil {
		s.first, s.start = p.pc, p.histEnd
	}
	return s
}

// exploredSegment is the segment leading to the remembered state e.
func exploredSegment(e *explored) segment {
	s := segment{last: e.last, end: e.histEnd, next: e.pc}
	if p := e.parent; p != nil {
		s.first, s.start = p.pc, p.histEnd
	}
	return s
}

// backtrack walks the current path backwards from the instruction being
// processed, marking the sources of the values in b precise in the
// remembered states on the way.
func (v *verifier) backtrack(b *btMasks) {
	v.backtrackFrom(b, v.curSegment(), v.cur.parent, v.cur)
}

// backtrackFrom walks back from segment seg of a path whose state is st
// (nil: a path that ended) and whose last remembered state is e.
func (v *verifier) backtrackFrom(b *btMasks, seg segment, e *explored, st *State) {
	for {
		if !v.backtrackSegment(b, seg) {
			v.markAllPreciseFrom(st, e)
			return
		}
		if e == nil || b.empty() {
			return
		}
		if !v.markIn(e.st, b) {
			v.markAllPreciseFrom(st, e)
			return
		}
		if b.empty() {
			return
		}
		seg = exploredSegment(e)
		e = e.parent
	}
}

// backtrackSegment walks one segment backwards; false asks for the
// conservative fallback.
func (v *verifier) backtrackSegment(b *btMasks, seg segment) bool {
	if seg.last < 0 {
		return true
	}
	h := seg.end
	subseq := seg.next
	for i, steps := seg.last, 0; ; steps++ {
		if steps > v.stats.Processed {
			return false // a history that does not add up
		}
		var flags uint32
		fromHist := h > seg.start && int(v.hist[h-1].idx) == i
		if fromHist {
			flags = v.hist[h-1].flags
		}
		if !v.backtrackInsn(b, i, subseq, flags) {
			return false
		}
		if b.empty() || i == seg.first {
			return true
		}
		subseq = i
		switch {
		case fromHist:
			i = int(v.hist[h-1].prev)
			h--
		case i >= 2 && v.insns[i-2].IsLdImm64():
			i -= 2
		default:
			i--
		}
		if i < 0 || i >= len(v.insns) {
			return false
		}
	}
}

// backtrackInsn turns the masks after instruction i into the masks before
// it: a traced register it wrote is replaced by what it was computed from.
// subseq is the instruction processed after i. False asks for the
// conservative fallback (callbacks, indirect calls).
func (v *verifier) backtrackInsn(b *btMasks, i, subseq int, flags uint32) bool {
	ins := v.insns[i]
	dst, src := ins.Dst, ins.Src
	x := ins.Op&isa.SrcX != 0
	stackSlot := func() (int, int, bool) {
		if flags&histStack == 0 {
			return 0, 0, false
		}
		return int(flags>>histFrameShift) & 7, int(flags & 63), true
	}
	switch ins.Class() {
	case isa.ClassALU, isa.ClassALU64:
		if !b.isReg(dst) {
			return true
		}
		switch ins.Op & 0xf0 {
		case isa.ALUMov:
			b.clearReg(dst)
			if x {
				b.setReg(src)
			}
		case isa.ALUNeg, isa.ALUEnd:
		default:
			if x {
				b.setReg(src)
			}
		}
	case isa.ClassLDX:
		if !b.isReg(dst) {
			return true
		}
		b.clearReg(dst)
		if fr, spi, ok := stackSlot(); ok {
			b.slots[fr] |= 1 << spi
		}
	case isa.ClassST, isa.ClassSTX:
		fr, spi, ok := stackSlot()
		if ins.Op&0xe0 == isa.ModeATOMIC {
			switch ins.Imm {
			case isa.AtomicLoadAcquire:
				if b.isReg(dst) {
					b.clearReg(dst)
					if ok {
						b.slots[fr] |= 1 << spi
					}
				}
				return true
			case isa.AtomicStoreRelease:
			default:
				// Read-modify-write: the slot is left unknown, and the
				// fetched register got the old contents.
				if ok {
					b.slots[fr] &^= 1 << spi
				}
				fetched := src
				if ins.Imm == isa.AtomicCmpXchg {
					fetched = isa.R0
				} else if ins.Imm&isa.AtomicFetch == 0 {
					return true
				}
				if b.isReg(fetched) {
					b.clearReg(fetched)
					if ok {
						b.slots[fr] |= 1 << spi
					}
				}
				return true
			}
		}
		if !ok || b.slots[fr]&(1<<spi) == 0 {
			return true
		}
		b.slots[fr] &^= 1 << spi
		if ins.Class() == isa.ClassSTX {
			b.setReg(src)
		}
	case isa.ClassLD:
		if ins.IsLdImm64() {
			b.clearReg(dst)
			return true
		}
		if subseq != i+1 {
			// A failed load returned from the subprogram (checkLdAbs):
			// the caller's R0 is 0.
			return b.intoCallee()
		}
		b.regs[b.frame] &^= callerRegs // LD_ABS/IND: R0 loaded, R1-R5 clobbered
	case isa.ClassJMP, isa.ClassJMP32:
		switch {
		case ins.Op == isa.OpExit && v.exitKind(i, subseq) == exitAmbiguous:
			return false
		case ins.Op == isa.OpExit && v.exitKind(i, subseq) == exitCallback:
			// Back from the helper call a callback returned to into the
			// callback: the caller's registers are as they were, and
			// the callback's R0 went to the helper only.
			b.frame++
			if b.frame >= MaxCallFrames {
				return false
			}
			b.regs[b.frame], b.slots[b.frame] = 0, 0
		case ins.Op == isa.OpExit:
			// Back from the caller (at subseq, after the call) into the
			// callee: the caller's R0 is the callee's.
			r0 := b.isReg(isa.R0)
			b.regs[b.frame] &^= callerRegs
			b.frame++
			if b.frame >= MaxCallFrames {
				return false
			}
			b.regs[b.frame], b.slots[b.frame] = 0, 0
			if r0 {
				b.setReg(isa.R0)
			}
		case ins.Op == isa.OpCall && ins.IsLocalCall() && v.isGlobal(subprogAt(v.subs, i+1+int(ins.Imm))):
			// A global function, not followed: like a helper, it
			// returned R0 and clobbered R1-R5.
			b.regs[b.frame] &^= callerRegs
		case ins.Op == isa.OpCall && ins.IsLocalCall():
			// Back out of the callee's entry into the caller: the
			// callee's arguments are the caller's R1-R5.
			callee := b.frame
			if callee == 0 || subseq != i+1+int(ins.Imm) || b.regs[callee]&^(argRegs|fpReg) != 0 {
				return false
			}
			args := b.regs[callee] & argRegs
			b.regs[callee], b.slots[callee] = 0, 0
			b.frame--
			b.regs[b.frame] |= args
		case ins.Op == isa.OpCall && v.callbackSites[i] && subseq != i+1:
			// Back out of a callback's entry into the helper call that
			// called it: the helper made its arguments, from its own
			// (the caller's R3 is the callback's context argument).
			callee := b.frame
			if callee == 0 || subseq != v.subs[subprogAt(v.subs, subseq)].Start || b.regs[callee]&^argRegs != 0 || b.slots[callee] != 0 {
				return false
			}
			args := b.regs[callee]
			b.regs[callee] = 0
			b.frame--
			if args != 0 {
				b.setReg(isa.R3)
			}
		case ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && subseq != i+1 && !v.callbackSites[i]:
			// A tail call from a subprogram that went on in the caller
			// (tailCall): the caller's R0 is the tail-called program's.
			return b.intoCallee()
		case ins.Op == isa.OpCall:
			b.regs[b.frame] &^= callerRegs // R0 returned, R1-R5 clobbered
		case ins.Op == isa.OpCallX:
			return false
		case ins.Op&0xf0 == isa.JumpA || ins.Op == isa.OpMayGoto:
		default:
			// A comparison of two registers refines both: the bounds
			// of one come from the other.
			if x && (b.isReg(dst) || b.isReg(src)) {
				b.setReg(dst)
				b.setReg(src)
			}
		}
	}
	return true
}

// Kinds of exits met walking backwards.
const (
	exitCall      = iota // a return after a bpf-to-bpf call
	exitCallback         // back to the helper call that called a callback
	exitAmbiguous        // could be either
)

// exitKind tells how the exit at i went on to subseq.
func (v *verifier) exitKind(i, subseq int) int {
	if subseq < 0 || subseq >= len(v.insns) || !v.callbackSites[subseq] || !v.subs[subprogAt(v.subs, i)].Callback {
		return exitCall
	}
	if c := subseq - 1; c >= 0 && v.insns[c].IsLocalCall() && c+1+int(v.insns[c].Imm) == v.subs[subprogAt(v.subs, i)].Start {
		return exitAmbiguous
	}
	return exitCallback
}

// markIn marks the traced registers and slots precise in the remembered
// state st, where the walk reached it. Those already precise were traced
// when they were marked, so they leave the masks; so do non-scalars.
// Scalars linked to a newly marked one (the same id) are marked and traced
// too: their bounds move together. False asks for the fallback.
func (v *verifier) markIn(st *State, b *btMasks) bool {
	if b.frame != len(st.Frames)-1 {
		return false
	}
	for fr := len(st.Frames); fr < MaxCallFrames; fr++ {
		if b.regs[fr] != 0 || b.slots[fr] != 0 {
			return false
		}
	}
	var linked []uint32
	for fr := range st.Frames {
		f := st.Frames[fr]
		if b.regs[fr] != 0 || b.slots[fr] != 0 {
			f = st.frame(fr) // marks are the state's own
		}
		for r := range f.Regs {
			if b.regs[fr]&(1<<r) == 0 {
				continue
			}
			reg := &f.Regs[r]
			if reg.Type != ScalarValue || reg.Precise {
				b.regs[fr] &^= 1 << r
				continue
			}
			reg.Precise = true
			v.marks++
			if reg.ID != 0 {
				linked = append(linked, linkBase(reg.ID))
			}
		}
		for s := range f.Stack {
			if b.slots[fr]&(1<<s) == 0 {
				continue
			}
			sl := &f.Stack[s]
			if !sl.isSpill() || sl.Spilled.Type != ScalarValue || sl.Spilled.Precise {
				b.slots[fr] &^= 1 << s
				continue
			}
			sl.Spilled.Precise = true
			v.marks++
			if sl.Spilled.ID != 0 {
				linked = append(linked, linkBase(sl.Spilled.ID))
			}
		}
		// Slots past the stack's end were never written.
		if n := len(f.Stack); n < 64 {
			b.slots[fr] &= 1<<n - 1
		}
	}
	for _, id := range linked {
		for fr := range st.Frames {
			f := st.frame(fr)
			for r := range f.Regs {
				if reg := &f.Regs[r]; reg.Type == ScalarValue && reg.ID != 0 && linkBase(reg.ID) == id && !reg.Precise {
					reg.Precise = true
					v.marks++
					b.regs[fr] |= 1 << r
				}
			}
			for s := range f.Stack {
				if sl := &f.Stack[s]; sl.isSpill() && sl.Spilled.Type == ScalarValue && sl.Spilled.ID != 0 && linkBase(sl.Spilled.ID) == id && !sl.Spilled.Precise {
					sl.Spilled.Precise = true
					v.marks++
					b.slots[fr] |= 1 << s
				}
			}
		}
	}
	return true
}

// markAllPrecise is the fallback where the walk cannot follow a value:
// every scalar of the current state and of its remembered ancestors
// becomes precise, which is what comparing without precision tracking
// would do.
func (v *verifier) markAllPrecise() { v.markAllPreciseFrom(v.cur, v.cur.parent) }

// markAllPreciseFrom marks every scalar of st (unless nil) and of e and its
// ancestors precise.
func (v *verifier) markAllPreciseFrom(st *State, e *explored) {
	v.stats.PrecisionFallbacks++
	setAll := func(st *State) {
		st.forEachReg(func(r *Reg) bool { return r.Type == ScalarValue && !r.Precise }, func(r *Reg) {
			r.Precise = true
			v.marks++
		})
	}
	if st != nil {
		setAll(st)
	}
	for ; e != nil; e = e.parent {
		setAll(e.st)
	}
}

// forgetPrecision clears the precision marks of the current state once a
// copy of it is remembered: the marks belong to the remembered states,
// where backtracking puts them (the kernel's mark_all_scalars_imprecise).
func (st *State) forgetPrecision() {
	st.forEachReg(func(r *Reg) bool { return r.Precise }, func(r *Reg) { r.Precise = false })
}
