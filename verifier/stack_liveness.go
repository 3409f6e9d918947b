package verifier

import (
	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
)

// Stack slot liveness, computed once before the walk like register
// liveness: for every instruction, the 8-byte slots of its function's own
// frame that some path from there may read before overwriting them whole.
// State comparison skips the other slots of the frame being verified.
//
// Which slot an access touches is known statically only for pointers that
// are the frame pointer plus a constant. A forward pass finds, for every
// instruction, what each register may be: not a pointer into this frame,
// fp+k on every path, fp+k or not a stack pointer, or a stack pointer at an
// unknown offset; and which slots may hold a spilled stack pointer. The
// backward pass is then conservative wherever that is not exact: a read
// through a stack pointer at an unknown offset, or a helper call that is
// passed a stack pointer (it may read any slot of this frame), makes every
// slot live; only a full 8-byte write at a known slot ends a slot's life.
// A function whose stack pointer escapes (stored anywhere but in its own
// slots, or passed to a function or callback, which could store it where
// this function reads it back unseen) has every slot read by each of its
// loads and calls: only the stretches without one (the way to an exit, say)
// see slots die.
//
// Only the frame being verified uses this; the frames of its callers are
// compared whole, as a callee may reach them through pointers.

// fpKind says what a register may hold, for the stack analysis.
type fpKind uint8

const (
	fpNone    fpKind = iota // not reached yet
	fpNot                   // not a pointer into this frame
	fpConst                 // the constant c on every path (a helper's size argument)
	fpMap                   // a map on every path (LD_IMM64), c its key and value sizes (mapKV)
	fpExact                 // fp+off on every path
	fpMaybe                 // fp+off, or not a stack pointer
	fpUnknown               // may point anywhere in this frame
)

// fpVal is a register's kind and, for fpExact and fpMaybe, its offset;
// for fpConst, its value; for fpMap, the largest key and value sizes of
// the maps it may be (mapKV).
type fpVal struct {
	kind fpKind
	off  int16
	c    int64
}

func (a fpVal) mayStack() bool { return a.kind >= fpExact }

// fpMapOf is a map register whose map has keys and values of those sizes
// (at most).
func fpMapOf(key, value int) fpVal {
	return fpVal{kind: fpMap, c: int64(uint32(key))<<32 | int64(uint32(value))}
}

// mapKV returns the key and value sizes of an fpMap.
func (a fpVal) mapKV() (key, value int) { return int(uint64(a.c) >> 32), int(uint32(a.c)) }

func joinFP(a, b fpVal) fpVal {
	switch {
	case a.kind == fpNone:
		return b
	case b.kind == fpNone || a == b:
		return a
	case a.kind == fpMap && b.kind == fpMap:
		// One of two maps: a helper reads at most the larger key or
		// value through the pointer it is given.
		ak, av := a.mapKV()
		bk, bv := b.mapKV()
		return fpMapOf(max(ak, bk), max(av, bv))
	case a.kind == fpUnknown || b.kind == fpUnknown:
		return fpVal{kind: fpUnknown}
	case !a.mayStack() && !b.mayStack():
		return fpVal{kind: fpNot} // different constants, or none
	case !a.mayStack():
		return fpVal{kind: fpMaybe, off: b.off}
	case !b.mayStack():
		return fpVal{kind: fpMaybe, off: a.off}
	case a.off == b.off: // exact and maybe at the same offset
		return fpVal{kind: fpMaybe, off: a.off}
	}
	return fpVal{kind: fpUnknown}
}

// fpState is the forward pass's state before an instruction.
type fpState struct {
	regs [11]fpVal
	// spills are the slots that may hold a spilled stack pointer.
	spills uint64
}

func (s *fpState) join(o *fpState) bool {
	old := *s
	for i := range s.regs {
		s.regs[i] = joinFP(s.regs[i], o.regs[i])
	}
	s.spills |= o.spills
	return *s != old
}

// slotsOf returns the slots [off, off+size) covers, or all when off is
// out of the frame.
func slotsOf(off int32, size int) uint64 {
	if off < -MaxStack || off+int32(size) > 0 || size <= 0 {
		return ^uint64(0)
	}
	first := (-(off + int32(size))) / 8
	last := (-off - 1) / 8
	var m uint64
	for i := first; i <= last; i++ {
		m |= 1 << i
	}
	return m
}

// successors returns the instructions that may follow pc in its function
// (-1 for none).
func successors(insns []isa.Instruction, pc int) (int, int) {
	ins := insns[pc]
	next := pc + 1
	if ins.IsLdImm64() {
		next = pc + 2
	}
	if next >= len(insns) {
		next = -1
	}
	switch {
	case ins.Op == isa.OpExit:
		return -1, -1
	case ins.Op == isa.OpJA || ins.Op == isa.OpJA32:
		t, _ := ins.JumpTarget(pc)
		return t, -1
	}
	if t, ok := ins.JumpTarget(pc); ok && t >= 0 && t < len(insns) {
		return next, t
	}
	return next, -1
}

// stackEffect is what an instruction does to this frame's slots: the slots
// it reads and the slots it overwrites whole.
type stackEffect struct{ use, def uint64 }

// fpStep applies instruction ins to s and returns its stack effect and
// whether a pointer into the frame escapes. callback tells helper calls
// that call back into the program, args the registers a call passes.
func fpStep(ins isa.Instruction, s *fpState, callback bool, args regSet, proto *Proto, sizes mapSizes) (e stackEffect, escapes bool) {
	x := ins.Op&isa.SrcX != 0
	not := fpVal{kind: fpNot}
	access := func(base fpVal, off int32, size int) uint64 {
		switch base.kind {
		case fpExact, fpMaybe:
			return slotsOf(int32(base.off)+off, size)
		case fpUnknown:
			return ^uint64(0)
		}
		return 0
	}
	switch ins.Class() {
	case isa.ClassALU:
		s.regs[ins.Dst] = not
		if ins.Op&0xf0 == isa.ALUMov && !x {
			s.regs[ins.Dst] = fpVal{kind: fpConst, c: int64(uint32(ins.Imm))}
		}
	case isa.ClassALU64:
		d := &s.regs[ins.Dst]
		switch op := ins.Op & 0xf0; {
		case op == isa.ALUMov && x && ins.Off == 0:
			*d = s.regs[ins.Src]
		case op == isa.ALUMov && !x:
			*d = fpVal{kind: fpConst, c: int64(ins.Imm)}
		case op == isa.ALUMov:
			*d = not
		case (op == isa.ALUAdd || op == isa.ALUSub) && !x && (d.kind == fpExact || d.kind == fpMaybe):
			k := int64(ins.Imm)
			if op == isa.ALUSub {
				k = -k
			}
			if n := int64(d.off) + k; n >= -MaxStack && n <= 0 {
				d.off = int16(n)
			} else {
				*d = fpVal{kind: fpUnknown}
			}
		case d.mayStack() || x && s.regs[ins.Src].mayStack():
			*d = fpVal{kind: fpUnknown}
		default:
			*d = not
		}
	case isa.ClassLDX:
		base := s.regs[ins.Src]
		e.use = access(base, int32(ins.Off), isa.SizeBytes(ins.Op))
		s.regs[ins.Dst] = not
		if e.use&s.spills != 0 {
			s.regs[ins.Dst] = fpVal{kind: fpUnknown}
		}
	case isa.ClassST, isa.ClassSTX:
		base := s.regs[ins.Dst]
		size := isa.SizeBytes(ins.Op)
		m := access(base, int32(ins.Off), size)
		val := not
		if ins.Class() == isa.ClassSTX {
			val = s.regs[ins.Src]
		}
		if ins.Op&0xe0 == isa.ModeATOMIC && ins.Imm != isa.AtomicStoreRelease {
			// Store-release is a plain store; the others read the slot
			// and leave an unknown scalar in it.
			e.use = m
			switch {
			case ins.Imm == isa.AtomicLoadAcquire: // dst = *(src + off)
				e.use = access(s.regs[ins.Src], int32(ins.Off), size)
				s.regs[ins.Dst] = not
				if e.use&s.spills != 0 {
					s.regs[ins.Dst] = fpVal{kind: fpUnknown}
				}
			case ins.Imm == isa.AtomicCmpXchg:
				s.regs[isa.R0] = not
			case ins.Imm&isa.AtomicFetch != 0:
				s.regs[ins.Src] = not
			}
			break
		}
		if base.kind == fpExact && size == 8 && (int32(base.off)+int32(ins.Off))%8 == 0 {
			e.def = m
			s.spills &^= m
		}
		if val.mayStack() {
			s.spills |= m
			escapes = base.kind != fpExact
		}
	case isa.ClassLD:
		if ins.IsLdImm64() {
			s.regs[ins.Dst] = not
			if src := uint8(ins.Src); (src == isa.PseudoMapFD || src == isa.PseudoMapIdx) && sizes != nil {
				if key, value, ok := sizes(int64(ins.Imm)); ok {
					s.regs[ins.Dst] = fpMapOf(key, value)
				}
			}
			break
		}
		for r := isa.R0; r <= isa.R5; r++ {
			s.regs[r] = not
		}
	case isa.ClassJMP, isa.ClassJMP32:
		if ins.Op != isa.OpCall && ins.Op != isa.OpCallX {
			break
		}
		// A helper given a pointer into this frame reads the bytes its
		// prototype says (helperReads); a function or callback may read
		// any slot and also keep the pointer. A register the call does
		// not pass is not looked at.
		for r := isa.R1; r <= isa.R5; r++ {
			if args&reg(r) != 0 && s.regs[r].mayStack() {
				if proto != nil && ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && !callback {
					e.use |= helperReads(proto, s, r)
					continue
				}
				if n := iterArgSlots(ins, r); n > 0 && s.regs[r].kind != fpUnknown {
					// An iterator kfunc reads (or checks) the
					// iterator's slots, nothing else.
					e.use |= slotsOf(int32(s.regs[r].off), 8*n)
					continue
				}
				e.use = ^uint64(0)
				escapes = escapes || ins.Op == isa.OpCallX || ins.IsLocalCall() || callback
			}
		}
		for r := isa.R0; r <= isa.R5; r++ {
			s.regs[r] = not
		}
	}
	return e, escapes
}

// mapSizes returns the key and value sizes of the map of an index; ok is
// false for none.
type mapSizes func(idx int64) (key, value int, ok bool)

// iterArgSlots is the number of stack slots of the iterator an iterator
// kfunc call takes in r (its first argument), 0 for other calls and
// registers.
func iterArgSlots(ins isa.Instruction, r isa.Register) int {
	if ins.Src != isa.Register(isa.CallKfunc) || r != isa.R1 {
		return 0
	}
	k := helper.LookupKfunc(ins.Imm)
	if k == nil || k.Flags&(helper.KfIterNew|helper.KfIterNext|helper.KfIterDestroy) == 0 {
		return 0
	}
	return iterKinds[iterKindOf(k.Name)]
}

// helperReads returns the slots of this frame a helper call may read
// through argument register r, a pointer into the frame (the kernel marks
// the same ones read in check_helper_mem_access): the bytes the size
// argument covers when it is a constant, a map's key or value size for
// its key or value when the map argument is a map on every path (the
// largest of the maps it may be), else
// all from the pointer up, where every access must end; none for memory
// the helper only fills (raw mode) or does not access.
func helperReads(p *Proto, s *fpState, r isa.Register) uint64 {
	v := s.regs[r]
	upward := ^uint64(0)
	if v.kind != fpUnknown {
		upward = slotsOf(int32(v.off), -int(v.off))
	}
	switch t := p.Args[r-isa.R1]; {
	case t.IsDynptr():
		// A dynptr's two slots: read, or checked before they are made
		// one (an uninitialised argument must not hold a live dynptr).
		if v.kind != fpUnknown {
			return slotsOf(int32(v.off), 16)
		}
		return upward
	case !t.IsMem() && t != ArgStackOrNull:
		return 0 // not accessed through: a scalar to the helper
	case t.Uninit():
		return 0
	case t == ArgPtrToInt && v.kind != fpUnknown:
		return slotsOf(int32(v.off), 4)
	case t == ArgFixedMem && v.kind != fpUnknown:
		return slotsOf(int32(v.off), int(p.ArgSize[r-isa.R1]))
	case (t == ArgMapKey || t == ArgMapValue || t == ArgMapValueOrNull) && v.kind != fpUnknown:
		for i, a := range p.Args {
			if m := s.regs[isa.R1+isa.Register(i)]; a == ArgConstMapPtr && m.kind == fpMap {
				key, value := m.mapKV()
				if t == ArgMapKey {
					return slotsOf(int32(v.off), key)
				}
				return slotsOf(int32(v.off), value)
			}
		}
	case t == ArgMem || t == ArgMemOrNull || t == ArgWriteMem || t == ArgWriteMemOrNull:
		if r < isa.R5 && v.kind != fpUnknown {
			if n := s.regs[r+1]; n.kind == fpConst && n.c > 0 && n.c <= MaxStack {
				return slotsOf(int32(v.off), int(n.c))
			}
		}
	case t == ArgStackOrNull:
		return ^uint64(0)
	}
	return upward
}

// readsMemory reports whether an instruction may read memory through a
// pointer: loads, atomics and calls.
func readsMemory(ins isa.Instruction) bool {
	switch ins.Class() {
	case isa.ClassLDX:
		return true
	case isa.ClassSTX:
		return ins.Op&0xe0 == isa.ModeATOMIC
	case isa.ClassJMP, isa.ClassJMP32:
		return ins.Op == isa.OpCall || ins.Op == isa.OpCallX
	}
	return false
}

// computeStackLiveness returns, for every instruction, the slots of its
// function's frame live before it (bit i: fp-8*(i+1)). With in set, only
// the instructions in reports are part of the program: the others, and
// the edges into them, are taken as never run.
func computeStackLiveness(insns []isa.Instruction, subs []subprog, callbackSites []bool, args func(isa.Instruction) regSet, proto func(int32) *Proto, sizes mapSizes, in func(pc int) bool) []uint64 {
	n := len(insns)
	escaped := make([]bool, len(subs))
	// Forward: what registers and slots may hold, to the fixpoint.
	states := make([]fpState, n)
	reached := make([]bool, n)
	var work []int
	for _, sp := range subs {
		if sp.Start >= n || in != nil && !in(sp.Start) {
			continue
		}
		st := &states[sp.Start]
		for r := range st.regs {
			st.regs[r] = fpVal{kind: fpNot}
		}
		st.regs[isa.R10] = fpVal{kind: fpExact}
		reached[sp.Start] = true
		work = append(work, sp.Start)
	}
	effects := make([]stackEffect, n)
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		out := states[pc]
		var esc bool
		var passed regSet
		var p *Proto
		if insns[pc].Op == isa.OpCall {
			passed = args(insns[pc])
			if insns[pc].Src == isa.Register(isa.CallHelper) {
				p = proto(insns[pc].Imm)
			}
		} else if insns[pc].Op == isa.OpCallX {
			passed = argRegs
		}
		effects[pc], esc = fpStep(insns[pc], &out, callbackSites[pc], passed, p, sizes)
		if esc {
			escaped[subprogAt(subs, pc)] = true
		}
		a, b := successors(insns, pc)
		for _, t := range [2]int{a, b} {
			if t < 0 || in != nil && !in(t) {
				continue
			}
			if !reached[t] {
				reached[t] = true
				states[t] = out
				work = append(work, t)
			} else if states[t].join(&out) {
				work = append(work, t)
			}
		}
	}
	// Backward: live = use | (live after &^ def), by sweeps from the end
	// (one when every edge goes forward) until nothing changes.
	for pc := range n {
		if escaped[subprogAt(subs, pc)] && readsMemory(insns[pc]) {
			// Through a pointer that escaped, a load or a call may read
			// any slot. Nothing else reads memory, and nothing at all
			// once the function exits: its frame is gone.
			effects[pc].use = ^uint64(0)
		}
	}
	live := make([]uint64, n)
	for changed := true; changed; {
		changed = false
		for pc := n - 1; pc >= 0; pc-- {
			if !reached[pc] || live[pc] == ^uint64(0) {
				continue
			}
			var after uint64
			a, b := successors(insns, pc)
			if a >= 0 {
				after = live[a]
			}
			if b >= 0 {
				after |= live[b]
			}
			if in := effects[pc].use | after&^effects[pc].def; in != live[pc] {
				live[pc] = in
				changed = true
			}
		}
	}
	return live
}
