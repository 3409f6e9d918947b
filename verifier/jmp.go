package verifier

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

func (v *verifier) checkJump(pc int, ins isa.Instruction) (bool, error) {
	op := ins.Op & 0xf0
	switch {
	case ins.Op == isa.OpJA || ins.Op == isa.OpJA32:
		v.pc, _ = ins.JumpTarget(pc)
		return false, nil
	case ins.Op == isa.OpExit:
		return v.checkExit(pc)
	case ins.Op == isa.OpCall:
		switch uint8(ins.Src) {
		case isa.CallHelper:
			v.pc = pc + 1 // a helper with a callback moves on into it
			return false, v.checkHelperCall(pc, ins.Imm)
		case isa.CallLocal:
			return false, v.checkLocalCall(pc, pc+1+int(ins.Imm))
		case isa.CallKfunc:
			if ins.Imm == isa.KfuncThrow {
				return v.checkThrow(pc) // throw.go
			}
			v.pc = pc + 1
			return false, v.checkKfuncCall(pc, ins.Imm)
		}
		return false, v.errorf(pc, "calling kernel function %d is not supported", ins.Imm)
	case ins.Op == isa.OpCallX:
		return false, v.errorf(pc, "callx is not supported")
	case ins.Op == isa.OpMayGoto:
		// Both outcomes are possible: the loop budget may or may not be
		// exhausted. Going on counts one more round of the loop. As in
		// the kernel, the jump (out of the loop) is followed first and
		// the round queued: the order decides which states are there to
		// prune against, and so how much a program costs.
		target, _ := ins.JumpTarget(pc)
		round := v.cloneState(v.cur)
		round.mayGotoDepth++
		if prev := v.prevLoopState(pc); prev != nil {
			widenImprecise(prev, round) // iter.go
		}
		if err := v.push(round, pc, pc+1); err != nil {
			return false, err
		}
		v.pc = target
		return false, nil
	}
	return false, v.checkCondJump(pc, ins, op)
}

// checkCondJump explores a conditional jump: when the outcome is known only
// that side is followed, otherwise the taken side is queued and both sides
// learn what the comparison tells about the operands.
func (v *verifier) checkCondJump(pc int, ins isa.Instruction, op uint8) error {
	is32 := ins.Class() == isa.ClassJMP32
	x := ins.Op&isa.SrcX != 0
	target, _ := ins.JumpTarget(pc)
	dst, err := v.readReg(pc, ins.Dst)
	if err != nil {
		return err
	}
	var src Reg
	if x {
		s, err := v.readReg(pc, ins.Src)
		if err != nil {
			return err
		}
		src = *s
	} else {
		src = constScalar(uint64(int64(ins.Imm)))
		if is32 {
			src.Scalar = Const(uint64(uint32(ins.Imm)))
		}
	}

	taken := v.branchTaken(op, dst, &src, is32)
	if taken >= 0 {
		// The values decided the branch: they matter.
		v.markOperandsPrecise(ins, x)
		next, other := pc+1, target
		if taken == 1 {
			next, other = target, pc+1
		}
		if v.opts.Unprivileged {
			// The CPU may mispredict the branch: explore the other
			// side speculatively (spectre.go).
			if err := v.speculate(&ins, other, pc, nil); err != nil {
				return err
			}
		}
		v.pc = next
		return nil
	}
	if (dst.Type.IsPointer() || src.Type.IsPointer()) && v.opts.Unprivileged && !v.allowedPtrCompare(dst, &src, op, x, is32) {
		// The kernel names the source first.
		regno := ins.Dst
		pktAny := func(t RegType) bool { return t.isPacket() || t == PtrToPacketEnd }
		if x && src.Type.IsPointer() && !(pktAny(dst.Type) && pktAny(src.Type)) {
			regno = ins.Src
		}
		return v.errorf(pc, "R%d pointer comparison prohibited", regno)
	}

	other := v.cloneState(v.cur)
	// Refine both sides: this (fall-through) and other (taken).
	thisOK := v.refine(v.cur, pc, ins, op, is32, x, false)
	otherOK := v.refine(other, pc, ins, op, is32, x, true)
	switch {
	case thisOK && otherOK:
		if err := v.push(other, pc, target); err != nil {
			return err
		}
		v.pc = pc + 1
	case otherOK:
		v.markOperandsPrecise(ins, x)
		v.release(v.cur)
		v.cur = other
		v.pc = target
	default:
		// The fall-through is the only possibility (or neither, which a
		// sound domain never produces; keep the fall-through).
		v.markOperandsPrecise(ins, x)
		v.release(other)
		v.pc = pc + 1
	}
	return nil
}

// markOperandsPrecise marks the scalar operands of a comparison precise
// when their values decided which way it goes.
func (v *verifier) markOperandsPrecise(ins isa.Instruction, x bool) {
	v.markRegPrecise(ins.Dst)
	if x {
		v.markRegPrecise(ins.Src)
	}
}

// allowedPtrCompare: unprivileged programs may compare pointers only in a
// null check or against the packet end.
func (v *verifier) allowedPtrCompare(dst, src *Reg, op uint8, x, is32 bool) bool {
	if !x && !is32 && isNullCheck(dst, src, op) {
		return true
	}
	return x && !is32 && pktPair(dst.Type, src.Type) != 0
}

// branchTaken decides a comparison when it can: 1 always taken, 0 never,
// -1 unknown.
func (v *verifier) branchTaken(op uint8, dst, src *Reg, is32 bool) int {
	if dst.Type == PtrToArena || src.Type == PtrToArena {
		return -1 // an offset, 0 included (arena.go)
	}
	if dst.Type == ScalarValue && src.Type == ScalarValue {
		return BranchTaken(op, dst.Scalar, src.Scalar, is32)
	}
	if !is32 && (dst.Type == PtrToPacketEnd || src.Type == PtrToPacketEnd) {
		return pktEndTaken(op, dst, src)
	}
	// A pointer that cannot be NULL compared with 0. As in the kernel's
	// reg_not_null, only pointers that come from a successful lookup or
	// allocation count: the context, stack and packet pointers do not.
	ptr, other := dst, src
	if !ptr.Type.IsPointer() {
		ptr, other = src, dst
	}
	notNull := false
	switch ptr.Type {
	case PtrToMapValue, PtrToMapKey, PtrToMem, ConstPtrToMap, PtrToSocket, PtrToTCPSock, PtrToSockCommon:
		// Untrusted memory (a pointer to a non-struct loaded from a
		// kernel object: a function pointer, a string) may be NULL.
		notNull = !ptr.maybeNull() && ptr.Flags&Untrusted == 0
	case PtrToBTFID:
		// Trusted kernel objects (what an iterator's _next gives, a
		// tp_btf argument) are never NULL.
		notNull = !ptr.maybeNull() && isTrustedReg(ptr)
	}
	if notNull && other.Type == ScalarValue && other.IsConst() && other.Const() == 0 && !is32 {
		switch op {
		case isa.JumpEQ:
			return 0
		case isa.JumpNE:
			return 1
		}
	}
	return -1
}

// refine narrows state st for one outcome of a comparison and reports
// whether that outcome is possible.
func (v *verifier) refine(st *State, pc int, ins isa.Instruction, op uint8, is32, x, taken bool) bool {
	f := st.cur()
	dst := &f.Regs[ins.Dst]
	var src *Reg
	var imm Reg
	if x {
		src = &f.Regs[ins.Src]
	} else {
		imm = constScalar(uint64(int64(ins.Imm)))
		if is32 {
			imm.Scalar = Const(uint64(uint32(ins.Imm)))
		}
		src = &imm
	}
	switch {
	case dst.Type == ScalarValue && src.Type == ScalarValue:
		Refine(op, &dst.Scalar, &src.Scalar, is32, taken)
		if !dst.Scalar.Valid() || !src.Scalar.Valid() {
			return false
		}
		v.propagateScalar(st, dst)
		if x {
			v.propagateScalar(st, src)
		}
	case !is32 && !x && isNullCheck(dst, src, op):
		v.nullCheck(st, dst, src, op, taken)
	case !is32 && x:
		v.packetCompare(st, dst, src, op, taken)
	}
	return true
}

// propagateScalar copies what was learned about r to every register and
// spilled slot holding the same value, or that value plus a constant
// (the kernel's sync_linked_regs).
func (v *verifier) propagateScalar(st *State, r *Reg) {
	if r.ID == 0 {
		return
	}
	base, off, s := linkBase(r.ID), r.linkOff(), r.Scalar
	st.forEachReg(func(o *Reg) bool {
		return o.Type == ScalarValue && o != r && linkBase(o.ID) == base
	}, func(o *Reg) {
		if d := o.linkOff() - off; d != 0 {
			// o = r + d, wrapping as the program's arithmetic does.
			o.Scalar = v.scalarALU(isa.ALUAdd, s, Const(uint64(d)), true, false)
			return
		}
		o.Scalar = s
	})
}

// forEachReg calls fn for every register and spilled register of st that
// match reports (match must not change anything). A frame shared with
// other states is copied only when a register in it matches.
func (st *State) forEachReg(match func(*Reg) bool, fn func(*Reg)) {
	for fi, f := range st.Frames {
		if f.refs > 1 && !anyReg(f, match) {
			continue
		}
		f = st.frame(fi)
		for i := range f.Regs {
			if match(&f.Regs[i]) {
				fn(&f.Regs[i])
			}
		}
		for i := range f.Stack {
			if f.Stack[i].isSpill() && match(&f.Stack[i].Spilled) {
				fn(&f.Stack[i].Spilled)
			}
		}
	}
}

// anyReg reports whether a register or spilled register of f matches.
func anyReg(f *Frame, match func(*Reg) bool) bool {
	for i := range f.Regs {
		if match(&f.Regs[i]) {
			return true
		}
	}
	for i := range f.Stack {
		if f.Stack[i].isSpill() && match(&f.Stack[i].Spilled) {
			return true
		}
	}
	return false
}

// isNullCheck reports whether a 64-bit comparison of dst with the
// immediate src is a null check: `if ptr == 0` or `if ptr != 0` of a
// pointer that may be NULL. As in the kernel, comparisons with a register
// holding zero, and 32-bit ones (the low half of a pointer may be zero),
// are not.
func isNullCheck(dst, src *Reg, op uint8) bool {
	return dst.maybeNull() && src.Type == ScalarValue && src.IsConst() && src.Const() == 0 && (op == isa.JumpEQ || op == isa.JumpNE)
}

// nullCheck applies `if ptr == 0` / `if ptr != 0` to every register that
// shares the pointer's id (the kernel's mark_ptr_or_null_regs).
func (v *verifier) nullCheck(st *State, dst, src *Reg, op uint8, taken bool) {
	ptr, other := dst, src
	if !ptr.maybeNull() {
		ptr, other = src, dst
	}
	if other.Type != ScalarValue || !other.IsConst() || other.Const() != 0 || (op != isa.JumpEQ && op != isa.JumpNE) {
		return
	}
	isNull := (op == isa.JumpEQ) == taken
	id, ref := ptr.ID, ptr.RefID
	st.forEachReg(func(r *Reg) bool { return r.ID == id && r.maybeNull() }, func(r *Reg) {
		if isNull {
			*r = constScalar(0)
			return
		}
		r.Flags &^= MaybeNull
		if r.Type == PtrToMapValue && r.Map.Spec.Type.SocketValues() {
			// The kernel's mark_ptr_or_null_reg: an xskmap's element
			// is a socket.
			r.Type = PtrToXDPSock
		}
		if r.Type == PtrToMapValue && socketValued(r.Map) {
			// A sockmap's or sockhash's element is a full socket,
			// referenced (the kernel's mark_ptr_not_null_reg).
			r.Type, r.Map = PtrToSocket, nil
		}
		if !v.mayPointToSpinLock(r) {
			// The id only paired the copies for this check; a lock's
			// value keeps it to match bpf_spin_unlock with its lock.
			// Dropped, states differing only there prune (the
			// kernel's mark_ptr_or_null_reg).
			r.ID = 0
		}
	})
	if isNull && ref != 0 && ref == id {
		// The pointer holds the reference itself (not a cast of
		// it): NULL holds nothing to release.
		st.releaseRef(ref)
	}
}

// mayPointToSpinLock reports whether r may point at a spin lock: a value
// of a map whose values hold one (the kernel's reg_may_point_to_spin_lock).
func (v *verifier) mayPointToSpinLock(r *Reg) bool {
	if r.Type != PtrToMapValue || r.Map == nil {
		return false
	}
	f := v.mapFields(r.Map)
	return hasField(f, maps.SpinLock) || hasField(f, maps.ResSpinLock)
}

// pktPair classifies a comparison of packet pointers: 1 when dst is the
// pointer being checked (pkt vs pkt_end, or meta vs pkt), 2 when src is,
// 0 when the pair is not a packet bounds check.
func pktPair(dst, src RegType) int {
	switch {
	case dst == PtrToPacket && src == PtrToPacketEnd, dst == PtrToPacketMeta && src == PtrToPacket:
		return 1
	case dst == PtrToPacketEnd && src == PtrToPacket, dst == PtrToPacket && src == PtrToPacketMeta:
		return 2
	}
	return 0
}

// pktBound reports whether bound, the other side of a comparison that
// checks a packet pointer, is where that pointer's range ends: pkt_end
// (which no arithmetic moves), or for metadata the start of the packet
// data itself, untouched (the kernel's reg_is_init_pkt_pointer). A data
// pointer moved by a constant or a variable would prove the range against
// a point inside, or past, the packet.
func pktBound(bound *Reg) bool {
	switch bound.Type {
	case PtrToPacketEnd:
		return true
	case PtrToPacket:
		return bound.ID == 0 && bound.Off == 0 && bound.Scalar.Var.IsConst() && bound.Scalar.Var.Value == 0
	}
	return false
}

// packetCompare grants packet ranges from `pkt + N <op> pkt_end` checks
// (the kernel's try_match_pkt_pointers and find_good_pkt_pointers).
func (v *verifier) packetCompare(st *State, dst, src *Reg, op uint8, taken bool) {
	which := pktPair(dst.Type, src.Type)
	if which == 0 {
		return
	}
	ptr, bound := dst, src
	if which == 2 {
		ptr, bound = src, dst
	}
	if !pktBound(bound) {
		return
	}
	// For each operator: in which branch the pointer is known in bounds,
	// and whether the bound is strict ("<", giving one byte more).
	var goodWhenTaken, open bool
	switch {
	case op == isa.JumpGT && which == 1: // pkt' > end: fall-through good
		goodWhenTaken, open = false, false
	case op == isa.JumpGT && which == 2: // end > pkt': taken good
		goodWhenTaken, open = true, true
	case op == isa.JumpLT && which == 1: // pkt' < end
		goodWhenTaken, open = true, true
	case op == isa.JumpLT && which == 2: // end < pkt'
		goodWhenTaken, open = false, false
	case op == isa.JumpGE && which == 1: // pkt' >= end
		goodWhenTaken, open = false, true
	case op == isa.JumpGE && which == 2: // end >= pkt'
		goodWhenTaken, open = true, false
	case op == isa.JumpLE && which == 1: // pkt' <= end
		goodWhenTaken, open = true, false
	case op == isa.JumpLE && which == 2: // end <= pkt'
		goodWhenTaken, open = false, true
	default:
		return
	}
	if taken != goodWhenTaken {
		// The other branch: the pointer is beyond pkt_end (the good
		// branch has pkt' <= pkt_end) or at least at it (pkt' <
		// pkt_end), which decides later comparisons of it with pkt_end.
		if ptr.Type == PtrToPacket && bound.Type == PtrToPacketEnd {
			ptr.Range = beyondPktEnd
			if open {
				ptr.Range = atPktEnd
			}
		}
		return
	}
	if ptr.Off < 0 || (ptr.Off == 0 && open) || ptr.Umax > maxPacketOff || ptr.Umax+uint64(ptr.Off) > maxPacketOff {
		return
	}
	newRange := ptr.Off
	if open {
		newRange++
	}
	typ, id := ptr.Type, ptr.ID
	st.forEachReg(func(r *Reg) bool {
		return r.Type == typ && r.ID == id && r.Range < newRange
	}, func(r *Reg) { r.Range = newRange })
}

// Ranges of a packet pointer known to stand past the packet's end: a
// comparison with pkt_end found it beyond (pkt > pkt_end) or at least at
// it (pkt >= pkt_end), the kernel's BEYOND_PKT_END and AT_PKT_END. Only the
// compared register gets the mark, and arithmetic drops it (alu.go).
const (
	atPktEnd     int32 = -1
	beyondPktEnd int32 = -2
)

// pktEndTaken decides a comparison of a packet pointer marked at or beyond
// pkt_end with pkt_end: 1 always taken, 0 never, -1 unknown (the kernel's
// is_pkt_ptr_branch_taken).
func pktEndTaken(op uint8, dst, src *Reg) int {
	pkt := dst
	if dst.Type == PtrToPacketEnd {
		// pkt_end <op> pkt: the same as pkt <flipped op> pkt_end.
		pkt = src
		switch op {
		case isa.JumpGT:
			op = isa.JumpLT
		case isa.JumpLT:
			op = isa.JumpGT
		case isa.JumpGE:
			op = isa.JumpLE
		case isa.JumpLE:
			op = isa.JumpGE
		}
	}
	if pkt.Type != PtrToPacket || pkt.Range >= 0 {
		return -1
	}
	taken := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	switch op {
	case isa.JumpGT, isa.JumpLE:
		if pkt.Range == beyondPktEnd {
			return taken(op == isa.JumpGT)
		}
	case isa.JumpGE, isa.JumpLT:
		return taken(op == isa.JumpGE) // at or beyond
	}
	return -1
}

// maxPacketOff is the largest packet offset the verifier reasons about.
const maxPacketOff = 0xffff
