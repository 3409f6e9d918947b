package verifier

import (
	"fmt"
	"slices"

	"github.com/bpfvm/bpfvm/isa"
)

// Dynptrs, as the kernel's verifier tracks them: a struct bpf_dynptr is 16
// bytes of stack, two aligned slots marked StackDynptr, which a helper or
// kfunc taking an uninitialised dynptr makes (bpf_dynptr_from_mem,
// bpf_ringbuf_reserve_dynptr, bpf_dynptr_from_skb/xdp, bpf_dynptr_clone)
// and the others require initialised. The program never reads those bytes;
// a store or a helper writing into either slot destroys the dynptr whole,
// with the slices taken from it, and is refused for a ring buffer dynptr,
// which holds a reference that only bpf_ringbuf_submit_dynptr or
// bpf_ringbuf_discard_dynptr releases (the kernel's
// destroy_if_dynptr_stack_slot). Slices (bpf_dynptr_data, bpf_dynptr_slice,
// bpf_dynptr_slice_rdwr) are PtrToMem of the constant size asked for, maybe
// NULL (the run-time checks the range), remembering the dynptr they came
// from (Reg.Dynptr); slices of packet dynptrs die when the packet may have
// changed, as packet pointers do.

// StackDynptr marks the bytes of the two stack slots holding a dynptr.
const StackDynptr = StackIter + 1

// Dynptr kinds, the kernel's enum bpf_dynptr_type.
const (
	DynptrInvalid uint8 = iota
	DynptrLocal
	DynptrRingbuf
	DynptrSKB
	DynptrXDP
)

// dynptrAnyKind is the kind of a global function's dynptr argument, which
// may be any: the kernel takes it as local, but its slices and writes
// through it are treated as those of a packet dynptr, which is sound for
// every kind.
const dynptrAnyKind uint8 = 0xff

// dynptrPacket reports whether a dynptr of the kind may be the packet's.
func dynptrPacket(k uint8) bool { return k == DynptrSKB || k == DynptrXDP || k == dynptrAnyKind }

var dynptrKindNames = [...]string{DynptrInvalid: "<unknown>", DynptrLocal: "local", DynptrRingbuf: "ringbuf", DynptrSKB: "skb", DynptrXDP: "xdp"}

// dynptrKindName is the kernel's dynptr_type_str.
func dynptrKindName(k uint8) string {
	if int(k) < len(dynptrKindNames) {
		return dynptrKindNames[k]
	}
	return "<unknown>"
}

// DynptrSlot is one half of a dynptr, in a stack slot marked StackDynptr.
// Both halves hold the same kind, id and reference.
type DynptrSlot struct {
	// ID identifies the dynptr, for its slices (Reg.Dynptr).
	ID uint32
	// Ref is the reference a ring buffer dynptr holds (shared with its
	// clones), 0 for the other kinds.
	Ref uint32
	// Kind is one of the Dynptr* kinds.
	Kind uint8
	// First marks the half at the lower address, where a pointer to the
	// dynptr points.
	First bool
}

// dynptrRefcounted reports whether a dynptr of the kind holds a reference
// (the kernel's dynptr_type_refcounted).
func dynptrRefcounted(k uint8) bool { return k == DynptrRingbuf }

// dynptrMeta is what a call learns of its dynptr arguments.
type dynptrMeta struct {
	// id, ref and kind are those of the initialised dynptr argument.
	id, ref uint32
	kind    uint8
	// release is the register of the dynptr the call releases.
	release isa.Register
}

// dynptrOff checks where a pointer to a dynptr points (the kernel's
// dynptr_get_spi): a constant offset, 8-aligned, with room for both slots
// below the frame pointer. It returns the offset and whether both slots
// are inside the stack the frame has used so far.
func (v *verifier) dynptrOff(pc int, reg *Reg) (int, bool, error) {
	if !reg.IsConst() {
		return 0, false, v.errorf(pc, "dynptr has to be at a constant offset")
	}
	// The kernel sums into an int.
	off := int32(uint64(int64(reg.Off)) + reg.Const())
	spi := (-int64(off) - 1) / 8
	if off%8 != 0 || spi+1 < 2 {
		return 0, false, v.errorf(pc, "cannot pass in dynptr at an offset=%d", off)
	}
	f := v.cur.Frames[reg.Frame]
	return int(off), spi < int64(len(f.Stack)), nil
}

// dynptrAt returns the first half of the initialised dynptr reg points at,
// or nil.
func (v *verifier) dynptrAt(reg *Reg, off int) *Slot {
	f := v.cur.Frames[reg.Frame]
	i := (-off - 1) / 8
	if i >= len(f.Stack) || i < 1 {
		return nil
	}
	s, second := &f.Stack[i], &f.Stack[i-1]
	if s.Types[0] != StackDynptr || !s.Dynptr.First || second.Types[0] != StackDynptr {
		return nil
	}
	return s
}

// initDynptr checks an argument that must point at an initialised dynptr
// of kind want (DynptrInvalid: any) and returns it (the kernel's
// is_dynptr_reg_valid_init and is_dynptr_type_expected): one on the stack,
// or a global function's const dynptr argument.
func (v *verifier) initDynptr(pc int, regno isa.Register, reg *Reg, want uint8) (DynptrSlot, error) {
	var d DynptrSlot
	if reg.Type == PtrToConstDynptr {
		if err := v.checkPtrOffReg(pc, regno, reg, false); err != nil {
			return d, err
		}
		d = DynptrSlot{ID: reg.ID, Kind: reg.DynptrKind, First: true}
	} else {
		off, _, err := v.dynptrOff(pc, reg)
		if err != nil {
			return d, err
		}
		s := v.dynptrAt(reg, off)
		if s == nil {
			return d, v.errorf(pc, "Expected an initialized dynptr as arg #%d", regno-1)
		}
		d = s.Dynptr
	}
	if want != DynptrInvalid && d.Kind != want {
		return d, v.errorf(pc, "Expected a dynptr of type %s as arg #%d", dynptrKindName(want), regno-1)
	}
	return d, nil
}

// markDynptr makes the 16 bytes reg points at a new dynptr of the kind
// (the kernel's mark_stack_slots_dynptr): they are written first, which
// destroys what was there or fails for a referenced dynptr. A ring buffer
// dynptr acquires a reference, unless it is a clone sharing ref.
func (v *verifier) markDynptr(pc int, regno isa.Register, reg *Reg, kind uint8, ref uint32) (uint32, error) {
	off, _, err := v.dynptrOff(pc, reg)
	if err != nil {
		return 0, err
	}
	for i := int32(0); i < 16; i += 8 {
		if _, err := v.stackAccess(reg, access{pc: pc, reg: regno, off: i, size: 8, write: true}); err != nil {
			return 0, err
		}
	}
	id := v.newID()
	if dynptrRefcounted(kind) && ref == 0 {
		ref = v.newID()
		v.cur.Refs = append(v.cur.Refs, Ref{ID: ref, Insn: pc})
	}
	f := v.cur.frame(int(reg.Frame))
	i := (-off - 1) / 8
	for j, s := range []*Slot{&f.Stack[i], &f.Stack[i-1]} {
		*s = Slot{Dynptr: DynptrSlot{ID: id, Ref: ref, Kind: kind, First: j == 0}}
		for b := range s.Types {
			s.Types[b] = StackDynptr
		}
	}
	return id, nil
}

// destroyDynptr destroys the dynptr whose half holds fp+off, if any, as a
// write there does (the kernel's destroy_if_dynptr_stack_slot): both
// halves become never-written stack and its slices unknown scalars. A
// referenced dynptr cannot be overwritten.
func (v *verifier) destroyDynptr(pc int, f *Frame, off int) error {
	i := (-off - 1) / 8
	if i >= len(f.Stack) || f.Stack[i].Types[0] != StackDynptr {
		return nil
	}
	if !f.Stack[i].Dynptr.First {
		i++
	}
	if i >= len(f.Stack) || i < 1 {
		return v.errorf(pc, "verifier internal error: half a dynptr at fp%d", off)
	}
	if dynptrRefcounted(f.Stack[i].Dynptr.Kind) {
		return v.errorf(pc, "cannot overwrite referenced dynptr")
	}
	id := f.Stack[i].Dynptr.ID
	f.Stack[i], f.Stack[i-1] = Slot{}, Slot{}
	invalidateSlices(v.cur, id)
	return nil
}

// invalidateSlices makes the slices of dynptr id unknown scalars.
func invalidateSlices(st *State, id uint32) {
	st.forEachReg(func(r *Reg) bool { return r.Type == PtrToMem && r.Dynptr == id }, func(r *Reg) { *r = unknownScalar() })
}

// releaseDynptr ends the dynptr reg points at (the kernel's
// unmark_stack_slots_dynptr): a referenced one releases its reference,
// which ends its slices and its clones too.
func (v *verifier) releaseDynptr(pc int, reg *Reg) error {
	off, _, err := v.dynptrOff(pc, reg)
	if err != nil {
		return err
	}
	f := v.cur.frame(int(reg.Frame))
	i := (-off - 1) / 8
	d := f.Stack[i].Dynptr
	if !dynptrRefcounted(d.Kind) {
		f.Stack[i], f.Stack[i-1] = Slot{}, Slot{}
		return nil
	}
	v.cur.releaseRef(d.Ref)
	f = v.cur.frame(int(reg.Frame))
	for j := 1; j < len(f.Stack); j++ {
		if s := &f.Stack[j]; s.Types[0] == StackDynptr && s.Dynptr.First && s.Dynptr.Ref == d.Ref {
			f.Stack[j], f.Stack[j-1] = Slot{}, Slot{}
		}
	}
	return nil
}

// rawOverDynptr refuses a helper's fill of uninitialised memory [lo, hi)
// that covers part of a dynptr (the kernel's check in
// check_stack_range_initialized): the dynptr may be an argument of the
// same call.
func (v *verifier) rawOverDynptr(pc int, f *Frame, lo, hi int64) error {
	for off := lo; off < hi; off++ {
		i := int((-off - 1) / 8)
		if i < len(f.Stack) && f.Stack[i].Types[(off%8+8)%8] == StackDynptr {
			return v.errorf(pc, "potential write to dynptr at off=%d disallowed", off)
		}
	}
	return nil
}

// dynptrHelperArg checks a helper's dynptr argument (the kernel's
// check_func_arg for ARG_PTR_TO_DYNPTR and process_dynptr_func).
func (v *verifier) dynptrHelperArg(pc int, regno isa.Register, reg *Reg, at ArgType, m *dynptrMeta) error {
	if reg.Type != PtrToStack && reg.Type != PtrToConstDynptr {
		return v.errorf(pc, "R%d type=%s expected=fp, dynptr_ptr", regno, regTypeString(reg))
	}
	switch at {
	case ArgDynptrLocalUninit, ArgDynptrRingbufUninit:
		if reg.Type == PtrToConstDynptr {
			return v.errorf(pc, "Dynptr has to be an uninitialized dynptr")
		}
		kind := DynptrLocal
		if at == ArgDynptrRingbufUninit {
			kind = DynptrRingbuf
		}
		_, err := v.markDynptr(pc, regno, reg, kind, 0)
		return err
	case ArgDynptrRingbufRelease:
		if reg.Type == PtrToConstDynptr {
			return v.errorf(pc, "cannot release unowned const bpf_dynptr")
		}
		off, _, err := v.dynptrOff(pc, reg)
		if err != nil {
			return err
		}
		if s := v.dynptrAt(reg, off); s == nil || s.Dynptr.Ref == 0 {
			return v.errorf(pc, "arg %d is an unacquired reference", regno)
		}
		if _, err := v.initDynptr(pc, regno, reg, DynptrRingbuf); err != nil {
			return err
		}
		m.release = regno
		return nil
	}
	d, err := v.initDynptr(pc, regno, reg, DynptrInvalid)
	if err != nil {
		return err
	}
	m.id, m.ref, m.kind = d.ID, d.Ref, d.Kind
	return nil
}

// dynptrSafe compares the halves of dynptrs in the same slot of two
// states (the kernel's stacksafe for STACK_DYNPTR).
func dynptrSafe(old, cur *Slot, ids *idMap) bool {
	o, c := old.Dynptr, cur.Dynptr
	return cur.Types[0] == StackDynptr && o.Kind == c.Kind && o.First == c.First && ids.check(o.Ref, c.Ref) && ids.check(o.ID, c.ID)
}

// dynptrString prints a dynptr's half as the kernel's log prints the
// dynptr: "dynptr_ringbuf(id=1,ref_id=2)".
func dynptrString(s *Slot) string {
	d := s.Dynptr
	str := fmt.Sprintf("dynptr_%s(id=%d", dynptrKindName(d.Kind), d.ID)
	if d.Ref != 0 {
		str += fmt.Sprintf(",ref_id=%d", d.Ref)
	}
	return str + ")"
}

// skbKfuncTypes are the program types the kernel registers its skb kfunc
// set for (net/core/filter.c): bpf_dynptr_from_skb.
var skbKfuncTypes = map[string]bool{
	"sched_cls": true, "sched_act": true, "sk_skb": true, "socket_filter": true, "cgroup_skb": true,
	"lwt_out": true, "lwt_in": true, "lwt_xmit": true, "lwt_seg6local": true, "netfilter": true, "tracing": true,
}

// packetWritable reports whether the program type may write packet data
// (the kernel's may_access_direct_pkt_data for BPF_WRITE).
func (v *verifier) packetWritable() bool {
	switch v.pt.Name {
	case "sched_cls", "sched_act", "xdp", "lwt_xmit", "sk_skb", "sk_msg", "cgroup_sockopt":
		return true
	}
	return false
}

// isDynptrKfunc reports whether id is one of the dynptr kfuncs.
func isDynptrKfunc(id int32) bool {
	return id >= isa.KfuncDynptrFromSkb && id <= isa.KfuncDynptrIsRdonly
}

// checkDynptrKfunc verifies a call of a dynptr kfunc (the kernel's
// check_kfunc_args for KF_ARG_PTR_TO_DYNPTR and check_kfunc_call's cases
// for them).
func (v *verifier) checkDynptrKfunc(pc int, id int32) error {
	name := isa.KfuncName(id)
	switch {
	case id == isa.KfuncDynptrFromSkb && !skbKfuncTypes[v.pt.Name], id == isa.KfuncDynptrFromXdp && v.pt.Name != "xdp":
		return v.errorf(pc, "calling kernel function %s is not allowed", name)
	}
	arg := func(i int) (*Reg, error) { return v.readReg(pc, isa.Register(i+1)) }
	scalar := func(i int) error {
		reg, err := arg(i)
		if err != nil {
			return err
		}
		if reg.Type != ScalarValue {
			return v.errorf(pc, "R%d is not a scalar", i+1)
		}
		return nil
	}
	dynptr := func(i int) (*Reg, error) {
		reg, err := arg(i)
		if err != nil {
			return nil, err
		}
		if reg.Type != PtrToStack && reg.Type != PtrToConstDynptr {
			return nil, v.errorf(pc, "arg#%d expected pointer to stack or const struct bpf_dynptr", i)
		}
		return reg, nil
	}
	uninit := func(i int) (*Reg, error) {
		reg, err := dynptr(i)
		if err == nil && reg.Type == PtrToConstDynptr {
			return nil, v.errorf(pc, "Dynptr has to be an uninitialized dynptr")
		}
		return reg, err
	}
	var r0 Reg
	switch id {
	case isa.KfuncDynptrFromSkb, isa.KfuncDynptrFromXdp:
		ctx, err := arg(0)
		if err != nil {
			return err
		}
		if id == isa.KfuncDynptrFromSkb && !slices.Contains(v.pt.ContextNames, "__sk_buff") {
			if err := v.skbObjectArg(pc, ctx); err != nil {
				return err
			}
		} else {
			if ctx.Type != PtrToCtx {
				return v.errorf(pc, "arg#0 expected pointer to ctx, but got %s", regTypeString(ctx))
			}
			if err := v.checkPtrOffReg(pc, isa.R1, ctx, false); err != nil {
				return err
			}
		}
		if err := scalar(1); err != nil {
			return err
		}
		reg, err := uninit(2)
		if err != nil {
			return err
		}
		kind := DynptrSKB
		if id == isa.KfuncDynptrFromXdp {
			kind = DynptrXDP
		}
		if _, err := v.markDynptr(pc, isa.R3, reg, kind, 0); err != nil {
			return err
		}
		r0 = unknownScalar()
	case isa.KfuncDynptrClone:
		reg, err := dynptr(0)
		if err != nil {
			return err
		}
		d, err := v.initDynptr(pc, isa.R1, reg, DynptrInvalid)
		if err != nil {
			return err
		}
		clone, err := uninit(1)
		if err != nil {
			return err
		}
		if _, err := v.markDynptr(pc, isa.R2, clone, d.Kind, d.Ref); err != nil {
			return err
		}
		r0 = unknownScalar()
	default:
		reg, err := dynptr(0)
		if err != nil {
			return err
		}
		d, err := v.initDynptr(pc, isa.R1, reg, DynptrInvalid)
		if err != nil {
			return err
		}
		r0 = unknownScalar()
		switch id {
		case isa.KfuncDynptrAdjust:
			for i := 1; i <= 2; i++ {
				if err := scalar(i); err != nil {
					return err
				}
			}
		case isa.KfuncDynptrSlice, isa.KfuncDynptrSliceRdwr:
			if r0, err = v.dynptrSlice(pc, id, d); err != nil {
				return err
			}
		}
	}
	f := v.cur.cur()
	clearCallerSaved(f)
	f.Regs[0] = r0
	return nil
}

// dynptrSlice checks the rest of bpf_dynptr_slice(_rdwr)(p, offset,
// buffer__opt, buffer__szk) and returns the slice: memory of the constant
// size, maybe NULL, read-only for bpf_dynptr_slice, and writable only
// where the program may write packet data.
func (v *verifier) dynptrSlice(pc int, id int32, d DynptrSlot) (Reg, error) {
	off, err := v.readReg(pc, isa.R2)
	if err != nil {
		return Reg{}, err
	}
	if off.Type != ScalarValue {
		return Reg{}, v.errorf(pc, "R2 is not a scalar")
	}
	buf, err := v.readReg(pc, isa.R3)
	if err != nil {
		return Reg{}, err
	}
	size, err := v.readReg(pc, isa.R4)
	if err != nil {
		return Reg{}, err
	}
	if !(buf.Type == ScalarValue && buf.IsConst() && buf.Const() == 0) {
		if err := v.sliceBuffer(pc, buf, size); err != nil {
			v.log.printf("arg#2 arg#3 memory, len pair leads to invalid memory access\n")
			return Reg{}, err
		}
	}
	if size.Type != ScalarValue || !size.IsConst() {
		return Reg{}, v.errorf(pc, "R4 must be a known constant")
	}
	v.markRegPrecise(isa.R4)
	// Unlike bpf_dynptr_data's, the slice outlives its dynptr when that
	// is overwritten (destroy_if_dynptr_stack_slot ends plain PTR_TO_MEM
	// only, and the memory is still there): it goes with the dynptr's
	// reference, or with the packet.
	r0 := Reg{Type: PtrToMem, Flags: MaybeNull, MemSize: uint32(size.Const()), ID: v.newID(), RefID: d.Ref, DynptrKind: d.Kind, Scalar: Const(0)}
	if id == isa.KfuncDynptrSlice {
		r0.Flags |= Rdonly
	} else if !v.packetWritable() {
		return Reg{}, v.errorf(pc, "the prog does not allow writes to packet data")
	}
	return r0, nil
}

// sliceBuffer checks bpf_dynptr_slice's buffer argument R3 and its size R4 (the
// kernel's check_kfunc_mem_size_reg): readable and writable.
func (v *verifier) sliceBuffer(pc int, buf, size *Reg) error {
	if size.Type != ScalarValue {
		return v.errorf(pc, "R4 is not a scalar")
	}
	if size.Smin < 0 {
		return v.errorf(pc, "R4 min value is negative, either use unsigned or 'var &= const'")
	}
	if size.Umax >= maxVarOff {
		return v.errorf(pc, "R4 unbounded memory access, use 'var &= const' or 'if (var < const)'")
	}
	if !buf.Type.IsPointer() {
		return v.errorf(pc, "R3 type=%s expected=fp", regTypeString(buf))
	}
	var raw rawWrite
	if err := v.checkHelperMem(pc, isa.R3, buf, int(size.Umax), ArgWriteMem, size.IsConst(), true, &raw); err != nil {
		return err
	}
	v.markRegPrecise(isa.R4)
	return nil
}

// skbObjectArg checks bpf_dynptr_from_skb's first argument in a program
// whose context is not a struct __sk_buff (netfilter, tracing): there the
// kernel takes the argument as a PTR_TO_BTF_ID one, which a trusted
// struct sk_buff passes as the type __sk_buff projects
// (process_kf_arg_ptr_to_btf_id's taking_projection).
func (v *verifier) skbObjectArg(pc int, reg *Reg) error {
	if !isTrustedReg(reg) {
		return v.errorf(pc, "R1 must be referenced or trusted")
	}
	if err := v.checkPtrOffReg(pc, isa.R1, reg, true); err != nil {
		return err
	}
	if reg.Type != PtrToBTFID {
		return v.errorf(pc, "arg#0 is %s expected %s or socket", regTypeString(reg), regTypeString(&Reg{Type: PtrToBTFID, Flags: Trusted}))
	}
	if have := v.btfType(reg); have.TypeName() != "sk_buff" || reg.Off != 0 {
		return v.errorf(pc, "kernel function bpf_dynptr_from_skb args#0 expected pointer to STRUCT __sk_buff but R1 has a pointer to %s %s", kindName(have), have.TypeName())
	}
	return nil
}
