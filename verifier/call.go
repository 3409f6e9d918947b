package verifier

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// releaseRef drops an acquired reference.
func (st *State) releaseRef(id uint32) bool {
	for i, r := range st.Refs {
		if r.ID == id {
			st.Refs = slices.Delete(st.Refs, i, i+1)
			// Every copy of the released pointer becomes unusable.
			st.forEachReg(func(reg *Reg) bool { return reg.RefID == id }, func(reg *Reg) {
				*reg = unknownScalar()
			})
			return true
		}
	}
	return false
}

func (v *verifier) proto(id int32) *Proto {
	if v.opts.Helpers != nil {
		return v.opts.Helpers(id)
	}
	if h := helper.Builtin().LookupVariant(id, v.pt.HelperVariant(id)); h != nil {
		return &h.Proto
	}
	return nil
}

// caps is the privilege of the load: root's, or none.
func (v *verifier) caps() progtype.Cap {
	if v.opts.Unprivileged {
		return progtype.CapNone
	}
	return progtype.CapPerfmon
}

func (v *verifier) checkHelperCall(pc int, id int32) error {
	if err := v.checkCallInLock(pc, id, false); err != nil {
		return err
	}
	p := v.proto(id)
	name := isa.HelperName(id)
	if name == "" {
		name = "unknown"
	}
	// The type's func_proto set first, as the kernel asks it for the
	// prototype.
	if !v.pt.CanCall(id, v.caps()) {
		return v.errorf(pc, "program of this type cannot use helper %s#%d", name, id)
	}
	if msg := v.pt.HelperRefused(id); msg != "" {
		// A check of the kernel's for this helper and type
		// (check_get_func_ip), made before the arguments here.
		return v.errorf(pc, "func %s#%d %s", name, id, msg)
	}
	if p == nil {
		return v.errorf(pc, "invalid func %s#%d", name, id)
	}
	if p.MightSleep && !v.sleepable {
		return v.errorf(pc, "helper call might sleep in a non-sleepable prog")
	}
	if p.MightSleep && v.cur.RCULock {
		// A sleepable program's bpf_rcu_read_lock section may not sleep.
		return v.errorf(pc, "sleepable helper %s#%d in rcu_read_lock region", name, id)
	}
	if p.MightSleep && v.cur.PreemptDepth > 0 {
		return v.errorf(pc, "sleepable helper %s#%d in non-preemptible region", name, id)
	}
	if p.Name != "" {
		name = p.Name
	}
	f := v.cur.cur()
	var (
		m           *MapInfo
		memReg      = -1 // register of the last memory argument
		memArg      ArgType
		allocSize   uint64
		releaseRef  uint32
		argRef      uint32 // the reference an argument carries (the kernel's meta.ref_obj_id)
		callback    = -1
		constKey    uint64
		hasConstKey bool
		keyReg      Reg
		raw         rawWrite
		kptr        *maps.Field // bpf_kptr_xchg's field
		dm          dynptrMeta
	)
	for i, at := range p.Args {
		regno := isa.Register(i + 1)
		if at == ArgNone {
			break
		}
		reg, err := v.readReg(pc, regno)
		if err != nil {
			return err
		}
		if at != ArgAnything && reg.Type.isPacket() && !p.PktAccess {
			// Before any other check of the argument, as the kernel.
			return v.errorf(pc, "helper access to the packet is not allowed")
		}
		if at == ArgMapValue && m != nil && socketValued(m) {
			// A sockmap's or sockhash's value is a socket (the kernel's
			// resolve_map_arg_type).
			at = ArgSockBTF
		}
		if at.IsMem() {
			if err := v.checkMemArgType(pc, regno, reg, at); err != nil {
				return err
			}
		}
		switch at {
		case ArgAnything:
			if reg.Type.IsPointer() && v.opts.Unprivileged {
				return v.errorf(pc, "R%d leaks addr into helper function", regno)
			}
		case ArgStackOrNull:
			if reg.Type != PtrToStack && !(reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0) {
				return v.errorf(pc, "R%d type=%s expected=fp", regno, regTypeString(reg))
			}
		case ArgScalar:
			if reg.Type != ScalarValue {
				return v.errorf(pc, "R%d type=%s expected=scalar", regno, regTypeString(reg))
			}
		case ArgConstMapPtr:
			if reg.Type != ConstPtrToMap || reg.maybeNull() {
				return v.errorf(pc, "R%d type=%s expected=map_ptr", regno, regTypeString(reg))
			}
			m = reg.Map
			aux := &v.aux[pc]
			if aux.Map != nil && aux.Map != m {
				aux.MapConflict = true
			}
			aux.Map = m
		case ArgMapKey, ArgMapValue, ArgUninitMapValue:
			if m == nil {
				return v.errorf(pc, "invalid map_ptr to access map->key")
			}
			size := m.Spec.KeySize
			if at != ArgMapKey {
				size = m.Spec.ValueSize
			}
			if size == 0 {
				// A keyless map's key (the kernel checks the
				// arguments before the map type).
				return v.errorf(pc, "invalid zero-sized read")
			}
			if err := v.checkHelperMem(pc, regno, reg, int(size), at, true, false, &raw); err != nil {
				return err
			}
			if at == ArgMapKey {
				constKey, hasConstKey = v.constStackKey(pc, reg, int(size))
				v.noteConstKey(pc, constKey, hasConstKey)
				keyReg = *reg
			}
		case ArgMapValueOrNull:
			if m == nil {
				return v.errorf(pc, "invalid map_ptr to access map->value")
			}
			if reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0 {
				v.markRegPrecise(regno)
				break
			}
			if err := v.checkHelperMem(pc, regno, reg, int(m.Spec.ValueSize), at, true, false, &raw); err != nil {
				return err
			}
		case ArgPtrToLong:
			if err := v.checkHelperMem(pc, regno, reg, 8, at, true, false, &raw); err != nil {
				return err
			}
			// MEM_ALIGNED: the helper stores an s64 there.
			if err := v.checkAlign(pc, reg, 0, 8, true); err != nil {
				return err
			}
		case ArgFixedMem:
			if err := v.checkHelperMem(pc, regno, reg, int(p.ArgSize[i]), at, true, false, &raw); err != nil {
				return err
			}
		case ArgPtrToInt:
			if err := v.checkHelperMem(pc, regno, reg, 4, at, true, false, &raw); err != nil {
				return err
			}
			// MEM_ALIGNED: the helper reads and stores a u32 there.
			if err := v.checkAlign(pc, reg, 0, 4, true); err != nil {
				return err
			}
		case ArgConstStr:
			if err := v.checkConstStr(pc, regno, reg); err != nil {
				return err
			}
		case ArgMem, ArgUninitMem, ArgMemOrNull, ArgWriteMemOrNull, ArgWriteMem:
			// Checked with the size argument that follows.
			memReg, memArg = i+1, at
		case ArgConstSize, ArgConstSizeOrZero:
			if reg.Type != ScalarValue {
				return v.errorf(pc, "R%d type=%s expected=scalar", regno, regTypeString(reg))
			}
			if reg.Smin < 0 {
				return v.errorf(pc, "R%d min value is negative, either use unsigned or 'var &= const'", regno)
			}
			if reg.Umin == 0 && at == ArgConstSize {
				return v.errorf(pc, "R%d invalid zero-sized read: u64=[%d,%d]", regno, reg.Umin, reg.Umax)
			}
			if reg.Umax >= maxVarOff {
				return v.errorf(pc, "R%d unbounded memory access, use 'var &= const' or 'if (var < const)'", regno)
			}
			if memReg < 0 {
				return v.errorf(pc, "R%d size argument without a memory argument", regno)
			}
			// The largest size is checked; NULL passes only when
			// the size is exactly 0.
			ptr := &f.Regs[memReg]
			if err := v.checkHelperMem(pc, isa.Register(memReg), ptr, int(reg.Umax), memArg, reg.IsConst(), at == ArgConstSizeOrZero, &raw); err != nil {
				return err
			}
			v.markRegPrecise(regno)
		case ArgDynptr, ArgDynptrLocalUninit, ArgDynptrRingbufUninit, ArgDynptrRingbufRelease:
			if err := v.dynptrHelperArg(pc, regno, reg, at, &dm); err != nil {
				return err
			}
		case ArgConstAllocSize, ArgConstAllocSizeOrZero:
			if reg.Type != ScalarValue || !reg.IsConst() {
				return v.errorf(pc, "R%d is not a known constant'", regno)
			}
			allocSize = reg.Const()
			v.markRegPrecise(regno)
		case ArgSockCommon, ArgSockRelease, ArgSockBTF, ArgSockBTFOrNull:
			orNull := at == ArgSockBTFOrNull && (reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0 || isSocketOrNull(reg))
			if !isSocket(reg) && !orNull {
				want := "sock_common, sock, tcp_sock, xdp_sock"
				if at != ArgSockCommon {
					want += ", ptr_, trusted_ptr_"
				}
				return v.errorf(pc, "R%d type=%s expected=%s", regno, regTypeString(reg), want)
			}
			if at == ArgSockRelease {
				if reg.RefID == 0 {
					return v.errorf(pc, "R%d must be referenced when passed to release function", regno)
				}
				releaseRef = reg.RefID
			}
		case ArgSocketOrNull:
			// check_func_arg: NULL skips the type check; otherwise a
			// bpf_sock, which may be NULL (fullsock_types).
			if reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0 || reg.Type == PtrToSocket {
				break
			}
			return v.errorf(pc, "R%d type=%s expected=sock", regno, regTypeString(reg))
		case ArgBTFID:
			if err := v.btfIDArg(pc, regno, reg, p.ArgBTF[i]); err != nil {
				return err
			}
		case ArgCtxOrNull:
			if reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0 {
				break
			}
			if reg.Type != PtrToCtx {
				return v.errorf(pc, "R%d type=%s expected=ctx", regno, regTypeString(reg))
			}
			if err := v.checkPtrOffReg(pc, regno, reg, false); err != nil {
				return err
			}
		case ArgCtx:
			if reg.Type != PtrToCtx {
				return v.errorf(pc, "R%d type=%s expected=ctx", regno, regTypeString(reg))
			}
			if err := v.checkPtrOffReg(pc, regno, reg, false); err != nil {
				return err
			}
		case ArgCallback:
			if reg.Type != PtrToFunc {
				return v.errorf(pc, "R%d type=%s expected=func", regno, regTypeString(reg))
			}
			callback = int(reg.Subprog)
		case ArgSpinLock:
			if err := v.spinLockArg(pc, regno, reg, name == "bpf_spin_lock"); err != nil {
				return err
			}
		case ArgKptrDest:
			fld, err := v.kptrXchgDest(pc, regno, reg)
			if err != nil {
				return err
			}
			kptr = &fld
		case ArgKptrNew:
			if isNullReg(reg) {
				break
			}
			if err := v.kptrXchgNew(pc, regno, reg, *kptr); err != nil {
				return err
			}
			releaseRef = reg.RefID
		case ArgRingbufMem:
			if reg.Type != PtrToMem || reg.Flags&Ringbuf == 0 || reg.maybeNull() {
				return v.errorf(pc, "R%d type=%s expected=ringbuf_mem", regno, regTypeString(reg))
			}
			if reg.Off != 0 || !reg.IsConst() || reg.Const() != 0 {
				return v.errorf(pc, "R%d must have zero offset when passed to release func", regno)
			}
			releaseRef = reg.RefID
		}
		if reg.RefID != 0 && at != ArgAnything {
			argRef = reg.RefID
		}
	}
	if m != nil && rdonlyProg(m.Spec) && changesMap(id) {
		// After the arguments, as the kernel's record_func_map: a
		// program may not change a map read-only to it, whose frozen
		// contents the verifier takes as constants.
		return v.errorf(pc, "write into map forbidden")
	}
	if err := v.applyRawWrite(pc, &raw); err != nil {
		return err
	}
	if name == "bpf_dynptr_from_mem" {
		// The kernel's check_helper_call: local dynptrs are made
		// over map values only.
		if r1 := &f.Regs[1]; r1.Type != PtrToMapValue {
			return v.errorf(pc, "Unsupported reg type %s for bpf_dynptr_from_mem data", regTypeString(r1))
		}
	}
	if name == "bpf_get_local_storage" {
		// It cannot fail, so it takes no flags (the kernel's
		// check_helper_call).
		if r2 := &f.Regs[2]; r2.Type != ScalarValue || !r2.IsConst() || r2.Const() != 0 {
			return v.errorf(pc, "get_local_storage() doesn't support non-zero flags")
		}
	}
	if name == "bpf_snprintf" {
		if err := v.checkSnprintf(pc, f); err != nil {
			return err
		}
	}
	if callback >= 0 {
		// Before the map type, as the kernel's push_callback_call: a
		// map without a walk is "callback function not allowed".
		if err := v.queueCallback(pc, name, callback, m); err != nil {
			return err
		}
	}
	// After the arguments, as the kernel's check_map_func_compatibility:
	// the map type's description names the helpers that take it.
	if m != nil && (!m.Spec.Type.TakesHelper(name) || socketValued(m) && !v.mayUpdateSockmap(name)) {
		return v.errorf(pc, "cannot pass map_type %d into func %s#%d", m.Spec.Type, name, id)
	}
	if releaseRef != 0 && !v.cur.releaseRef(releaseRef) {
		return v.errorf(pc, "R1 must be referenced when passed to release function")
	}
	if releaseRef != 0 {
		argRef = 0
	}
	if dm.release != 0 {
		if err := v.releaseDynptr(pc, &f.Regs[dm.release]); err != nil {
			return err
		}
	}
	if p.TailCall {
		if err := v.tailCall(pc); err != nil {
			return err
		}
	}
	if p.ChangesPacket || name == "bpf_dynptr_write" && (dm.kind == DynptrSKB || dm.kind == dynptrAnyKind) {
		// The packet may have moved: every packet pointer is stale.
		// Writing through an skb dynptr may move it too (the
		// kernel's check_helper_call).
		invalidatePackets(v.cur)
	}
	for r := isa.R1; r <= isa.R5; r++ {
		f.Regs[r] = Reg{Type: NotInit}
	}
	r0 := &f.Regs[0]
	switch p.Ret {
	case RetInteger:
		*r0 = unknownScalar()
	case RetVoid:
		*r0 = Reg{Type: NotInit}
	case RetKptrOrNull:
		t, err := v.kptrType(*kptr)
		if err != nil {
			return v.errorf(pc, "%s: %v", name, err)
		}
		*r0 = v.btfPtr(t, MaybeNull)
		v.acquire(pc, r0)
	case RetMapValueOrNull:
		if m.Spec.Type.OfMaps() { // the inner map
			inner := &MapInfo{Name: m.Name + ".inner", Index: -1}
			if m.Spec.InnerMap != nil {
				inner.Spec = *m.Spec.InnerMap
			}
			*r0 = Reg{Type: ConstPtrToMap, Flags: MaybeNull, Map: inner, ID: v.newID(), Scalar: Const(0)}
		} else if name == "bpf_map_lookup_elem" && m.Spec.Type.Indexed() && m.Spec.Flags&maps.FlagInnerMap == 0 && hasConstKey && constKey < uint64(m.Spec.MaxEntries) {
			// A constant key inside an array: the element exists, as the
			// kernel concludes too. The key's value matters. Not with
			// BPF_F_INNER_MAP: such an array is the template of inner
			// maps that may have fewer entries (the kernel's fix of
			// can_elide_value_nullness). Only for bpf_map_lookup_elem,
			// as the kernel: a lookup with more arguments (a CPU) may
			// miss whatever the key.
			v.markSlotPrecise(int(keyReg.Frame), (-(int(keyReg.Off)+int(keyReg.Const()))-1)/8)
			*r0 = Reg{Type: PtrToMapValue, Map: m, Scalar: Const(0)}
		} else {
			*r0 = Reg{Type: PtrToMapValue, Flags: MaybeNull, Map: m, ID: v.newID(), Scalar: Const(0)}
			if socketValued(m) {
				// A sockmap's or sockhash's element is a socket
				// the lookup takes a reference to (the kernel's
				// is_acquire_function), to release with
				// bpf_sk_release. It is map_value_or_null until
				// the null check makes it a socket (nullCheck).
				v.acquire(pc, r0)
			}
		}
	case RetMapValue:
		*r0 = Reg{Type: PtrToMapValue, Map: m, Scalar: Const(0)}
	case RetDynptrMemOrNull:
		// A slice of the dynptr argument: it dies with the dynptr's
		// reference, or with the dynptr when one is overwritten.
		*r0 = Reg{Type: PtrToMem, Flags: MaybeNull, MemSize: uint32(allocSize), ID: v.newID(), RefID: dm.ref, Dynptr: dm.id, Scalar: Const(0)}
	case RetRingbufMemOrNull:
		if allocSize == 0 || allocSize > uint64(m.Spec.MaxEntries) {
			return v.errorf(pc, "R2 invalid ringbuf reservation size %d", allocSize)
		}
		*r0 = Reg{Type: PtrToMem, Flags: MaybeNull | Ringbuf, MemSize: uint32(allocSize), ID: v.newID(), Scalar: Const(0)}
		v.acquire(pc, r0)
	case RetBTFIDTrusted:
		t, err := v.kernelStruct(p.RetBTF)
		if err != nil {
			return v.errorf(pc, "%s: %v", name, err)
		}
		*r0 = v.btfPtr(t, Trusted)
	case RetSocketOrNull, RetSockCommonOrNull, RetTCPSockOrNull:
		t := PtrToSocket
		switch p.Ret {
		case RetSockCommonOrNull:
			t = PtrToSockCommon
		case RetTCPSockOrNull:
			t = PtrToTCPSock
		}
		*r0 = Reg{Type: t, Flags: MaybeNull, ID: v.newID(), Scalar: Const(0)}
		switch {
		case p.Acquire:
			v.acquire(pc, r0)
		case p.Cast:
			r0.RefID = argRef
		}
	}
	return nil
}

// socketValued reports whether the values of m are sockets that the
// generic update takes as socket pointers (sockmaps, sockhashes).
func socketValued(m *MapInfo) bool {
	return m.Spec.Type == maps.SockMap || m.Spec.Type == maps.SockHash
}

// mayUpdateSockmap reports whether a program of the type may call helper
// name on a sockmap or sockhash (the kernel's may_update_sockmap): the
// generic update and delete only where no locked socket can be reached.
func (v *verifier) mayUpdateSockmap(name string) bool {
	if name != "bpf_map_update_elem" && name != "bpf_map_delete_elem" {
		return true
	}
	switch v.pt.Name {
	case "sock_ops":
		// Updates only through bpf_sock_map_update, which checks the
		// callback.
		return name == "bpf_map_delete_elem"
	case "socket_filter", "sched_cls", "sched_act", "xdp", "sk_reuseport", "flow_dissector", "sk_lookup":
		return true
	}
	return false
}

// acquire gives r0, a helper's result that may be NULL, a new reference,
// also its id (the kernel's acquire_reference after the id of the null
// check): a null check that finds it NULL drops the reference.
func (v *verifier) acquire(pc int, r0 *Reg) {
	ref := v.newID()
	v.cur.Refs = append(v.cur.Refs, Ref{ID: ref, Insn: pc})
	r0.ID, r0.RefID = ref, ref
}

// isSocket reports whether reg is a socket pointer, null-checked: what
// the kernel's sock_common_types hold.
func isSocket(reg *Reg) bool { return isSocketOrNull(reg) && !reg.maybeNull() }

// isSocketOrNull reports whether reg is a socket pointer, null-checked or
// not.
func isSocketOrNull(reg *Reg) bool {
	switch reg.Type {
	case PtrToSockCommon, PtrToSocket, PtrToTCPSock, PtrToXDPSock:
		return true
	}
	return false
}

// invalidatePackets makes every packet pointer of st unusable, after
// something that may have moved the packet.
func invalidatePackets(st *State) {
	st.forEachReg(func(r *Reg) bool {
		return r.Type == PtrToPacket || r.Type == PtrToPacketEnd || r.Type == PtrToPacketMeta || r.Type == PtrToMem && dynptrPacket(r.DynptrKind)
	}, func(r *Reg) { *r = unknownScalar() })
}

// tailCall verifies what bpf_tail_call does besides taking its arguments.
// A successful tail call replaces the current function by the target
// program, which runs in its frame: from the entry function it ends the
// program, so no reference may be held; from a subprogram, the target
// returns to that subprogram's caller with the target's R0, after doing
// whatever it likes to the packet. That return is a path of its own,
// queued here: the caller goes on with R0 unknown and every packet pointer
// invalid, as the kernel has it. The fall-through is the call failing.
func (v *verifier) tailCall(pc int) error {
	st := v.cur
	if len(st.Frames) == 1 {
		if len(st.Refs) > 0 {
			r := st.Refs[0]
			v.log.printf("Unreleased reference id=%d alloc_insn=%d\n", r.ID, r.Insn)
			return v.errorf(pc, "tail_call would lead to reference leak")
		}
		return nil
	}
	if st.top().Callback {
		// The target's R0 would go back to the helper as the callback's
		// result, which must be 0 or 1. (The kernel rejects this too,
		// through an internal error.)
		return v.errorf(pc, "tail call from a callback: R0 at callback return would be the tail-called program's, not in [0, 1]")
	}
	return v.queueReturn(pc, unknownScalar(), true)
}

// earlyReturn is a return to the caller without an exit: r0 is the
// result, pktChanged makes every packet pointer invalid.
type earlyReturn struct {
	r0         Reg
	pktChanged bool
}

// queueReturn notes that the subprogram being verified may return to its
// caller at pc, an instruction other than exit, with r0 as its result (a
// successful tail call, a failed LD_ABS); pktChanged makes every packet
// pointer invalid on that path. takeReturn follows it once the
// instruction is verified.
func (v *verifier) queueReturn(pc int, r0 Reg, pktChanged bool) error {
	v.ret = &earlyReturn{r0: r0, pktChanged: pktChanged}
	return nil
}

// takeReturn queues the path past the instruction at pc just verified and
// goes on with the return queueReturn noted, in the kernel's order
// (check_helper_call and check_ld_abs push the next instruction and exit
// the function at once): which path comes first decides what the other
// is pruned against and, for a program the verifier rejects, how far it
// gets first.
func (v *verifier) takeReturn(pc int) error {
	r := v.ret
	v.ret = nil
	if err := v.push(v.cloneState(v.cur), pc, v.pc); err != nil {
		return err
	}
	f := v.cur.popFrame()
	v.cur.cur().Regs[0] = r.r0
	if r.pktChanged {
		invalidatePackets(v.cur)
	}
	if v.log.level > 0 {
		v.log.printf("frame %d may return to the caller at %d from %d\n", f.Number, f.CallSite+1, pc)
	}
	v.pc = f.CallSite + 1
	return nil
}

// queueCallback verifies a helper that calls back into the program
// (bpf_loop, bpf_for_each_map_elem) as a loop, in the kernel's order
// (push_callback_call): the state entering the callback is queued, and the
// current one goes on past the helper, as if it returned at once. When the
// callback exits, verification resumes at the helper call, which queues
// the next round; pruning against the earlier rounds there ends the loop
// once a round brings nothing new. bpf_loop's rounds are bounded by its
// count, which is then precise.
func (v *verifier) queueCallback(pc int, name string, sub int, m *MapInfo) error {
	st := v.cur
	caller := st.top()
	v.noteLoopInline(pc, name, sub, caller) // iter.go
	if name == "bpf_loop" {
		v.markRegPrecise(isa.R1)
		if n := &caller.Regs[isa.R1]; n.Type == ScalarValue && uint64(caller.CallbackDepth) >= n.Umax {
			// As many rounds as the count allows: the helper returns.
			if v.log.level > 1 {
				v.log.printf("frame%d bpf_loop iteration limit reached\n", len(st.Frames)-1)
			}
			st.cur().CallbackDepth = 0
			return nil
		}
	}
	if len(st.Frames) >= MaxCallFrames {
		return v.errorf(pc, "the call stack of %d frames is too deep", len(st.Frames)+1)
	}
	callee := &Frame{CallSite: pc, Subprog: sub, Number: len(st.Frames), Callback: true}
	for r := isa.R1; r <= isa.R5; r++ {
		callee.Regs[r] = Reg{Type: NotInit}
	}
	switch name {
	case "bpf_loop":
		// callback(u64 index, void *ctx)
		callee.Regs[1] = unknownScalar()
		callee.Regs[2] = caller.Regs[3]
	case "bpf_for_each_map_elem":
		if !m.Spec.Type.TakesHelper(name) {
			return v.errorf(pc, "callback function not allowed for map")
		}
		// callback(map, key, value, ctx)
		callee.Regs[1] = Reg{Type: ConstPtrToMap, Map: m, Scalar: Const(0)}
		callee.Regs[2] = Reg{Type: PtrToMapKey, Map: m, Scalar: Const(0)}
		callee.Regs[3] = Reg{Type: PtrToMapValue, Map: m, Scalar: Const(0)}
		callee.Regs[4] = caller.Regs[3]
	default:
		return v.errorf(pc, "callbacks of %s are not supported", name)
	}
	callee.Regs[10] = Reg{Type: PtrToStack, Frame: uint8(callee.Number), Scalar: Const(0)}
	round := v.cloneState(st)
	round.cur().CallbackDepth++
	round.pushFrame(callee)
	if err := v.push(round, pc, v.subs[sub].Start); err != nil {
		return err
	}
	st.cur().CallbackDepth = 0
	return nil
}

// memArgTypes are the register types helper memory arguments take, as the
// kernel lists them.
const memArgTypes = "fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_"

// checkMemArgType checks the type of a memory argument before its access
// is (the kernel's check_reg_type): NULL passes for arguments that may be
// NULL, whose size decides; a pointer that may be NULL passes there too,
// with the flag folded away as the kernel does.
func (v *verifier) checkMemArgType(pc int, regno isa.Register, reg *Reg, at ArgType) error {
	if at.OrNull() && reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0 {
		return nil
	}
	want, ok := memArgTypes, false
	switch reg.Type {
	case PtrToStack, PtrToPacket, PtrToPacketMeta, PtrToMapKey, PtrToMapValue:
		ok = true
	case PtrToMem:
		// Read-only memory only where the helper only reads; untrusted
		// memory (probe loads only) nowhere.
		ok = (reg.Flags&Rdonly == 0 || !at.Writes()) && reg.Flags&Untrusted == 0
	}
	if at == ArgConstStr {
		want, ok = "map_value", reg.Type == PtrToMapValue
	}
	if reg.maybeNull() && !at.OrNull() {
		ok = false
	}
	if !ok {
		return v.errorf(pc, "R%d type=%s expected=%s", regno, regTypeString(reg), want)
	}
	return nil
}

// rawWrite is the stack a helper fills (an uninitialised memory argument at
// a constant offset and size): marked written after every argument is
// checked, byte by byte, as the kernel's check_helper_call does.
type rawWrite struct {
	set   bool
	regno isa.Register
	frame int
	off   int
	size  int
}

// applyRawWrite marks the stack a helper fills as written: one-byte stores
// of unknown values, which turn spilled registers into unknown bytes and
// destroy the iterators they touch.
func (v *verifier) applyRawWrite(pc int, w *rawWrite) error {
	if !w.set {
		return nil
	}
	f := v.cur.frame(w.frame)
	for off := w.off; off < w.off+w.size; off++ {
		if err := v.stackWrite(f, access{pc: pc, reg: w.regno, size: 1, write: true}, off); err != nil {
			return err
		}
	}
	return nil
}

// checkHelperMem checks that a helper may access size bytes at reg for a
// memory argument of type at (the kernel's check_helper_mem_access):
// reading or, for arguments the helper writes, writing them. constSize
// says the size is known exactly; zeroOK allows NULL when size is 0. A
// fill of uninitialised stack is recorded in raw.
func (v *verifier) checkHelperMem(pc int, regno isa.Register, reg *Reg, size int, at ArgType, constSize, zeroOK bool, raw *rawWrite) error {
	write := at.Writes()
	a := access{pc: pc, reg: regno, size: size, write: write, helper: true}
	switch reg.Type {
	case PtrToStack:
		return v.helperStack(pc, regno, reg, size, write, at.Uninit() && constSize, raw)
	case PtrToPacket, PtrToPacketMeta:
		_, err := v.packetAccess(reg, a)
		return err
	case PtrToMapKey:
		if write {
			return v.errorf(pc, "R%d cannot write into %s", regno, regTypeString(reg))
		}
		return v.boundsCheck(reg, a, int64(reg.Map.Spec.KeySize), "map key, key_size")
	case PtrToMapValue:
		_, err := v.mapValueAccess(reg, a)
		return err
	case PtrToMem:
		if write && reg.Flags&Rdonly != 0 {
			return v.errorf(pc, "R%d cannot write into %s", regno, regTypeString(reg))
		}
		return v.boundsCheck(reg, a, int64(reg.MemSize), "memory, mem_size")
	}
	// NULL, which only arguments that may be NULL let through.
	if zeroOK && size == 0 && reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0 {
		v.markRegPrecise(regno)
		return nil
	}
	return v.errorf(pc, "R%d type=%s expected=fp", regno, regTypeString(reg))
}

// checkConstStr checks a constant-string argument (the kernel's
// check_reg_const_str): a constant address in the value of a frozen
// read-only array of one value, with a NUL between it and the value's
// end. The helper bounds its read by the value too, a cheap bound that
// does not rest on this proof.
func (v *verifier) checkConstStr(pc int, regno isa.Register, reg *Reg) error {
	m := reg.Map
	if !m.Fixed() {
		return v.errorf(pc, "R%d does not point to a readonly map'", regno)
	}
	if !reg.IsConst() {
		return v.errorf(pc, "R%d is not a constant address'", regno)
	}
	if !m.Spec.Type.DirectValue() {
		return v.errorf(pc, "no direct value access support for this map type")
	}
	vs := int64(m.Spec.ValueSize)
	if size := vs - int64(reg.Off); size <= 0 {
		return v.errorf(pc, "invalid access to map value, value_size=%d off=%d size=%d", vs, reg.Off, size)
	}
	if _, err := v.mapValueAccess(reg, access{pc: pc, reg: regno, size: int(vs - int64(reg.Off)), helper: true}); err != nil {
		return err
	}
	off := int64(reg.Off) + int64(reg.Const())
	if m.Spec.MaxEntries != 1 || off < 0 || off >= vs {
		return v.errorf(pc, "direct value access on string failed")
	}
	if int64(len(m.ReadOnlyValue)) < vs || !slices.Contains(m.ReadOnlyValue[off:vs], 0) {
		return v.errorf(pc, "string is not zero-terminated")
	}
	return nil
}

// changesMap reports whether a helper adds or removes a map's elements:
// bpf_map_update_elem, bpf_map_delete_elem, bpf_map_push_elem and
// bpf_map_pop_elem.
func changesMap(id int32) bool { return id == 2 || id == 3 || id == 87 || id == 88 }

// noteConstKey records a map lookup's key when it is a constant on the
// stack, for the rewrite's inlining of array lookups.
func (v *verifier) noteConstKey(pc int, k uint64, ok bool) {
	aux := &v.aux[pc]
	switch {
	case aux.ConstKeyConflict:
	case !ok || aux.HasConstKey && aux.ConstKey != k:
		aux.HasConstKey, aux.ConstKeyConflict = false, true
	default:
		aux.ConstKey, aux.HasConstKey = k, true
	}
}

// constStackKey returns the key a helper reads at reg when it is a constant
// on the stack (what a load of the key would give).
func (v *verifier) constStackKey(pc int, reg *Reg, size int) (uint64, bool) {
	// Without CAP_BPF the kernel tracks no constant keys (and elides no
	// NULL check).
	if v.opts.Unprivileged || reg.Type != PtrToStack || !reg.IsConst() || size > 8 || size&(size-1) != 0 {
		return 0, false
	}
	f := v.cur.frame(int(reg.Frame)) // reading may grow the stack
	off := int(reg.Off) + int(reg.Const())
	if off%size != 0 {
		return 0, false
	}
	k, err := v.stackRead(f, access{pc: pc, reg: 0, size: size}, off)
	if err != nil || k.Type != ScalarValue || !k.IsConst() {
		return 0, false
	}
	return k.Const(), true
}

// checkLocalCall enters a bpf-to-bpf call: a new frame whose R1-R5 are the
// caller's and whose R10 points at its own stack.
func (v *verifier) checkLocalCall(pc, target int) error {
	st := v.cur
	if len(st.Frames) >= MaxCallFrames {
		return v.errorf(pc, "the call stack of %d frames is too deep", len(st.Frames)+1)
	}
	sub := subprogAt(v.subs, target)
	if v.isGlobal(sub) {
		if v.cur.heldLock() != nil {
			return v.errorf(pc, "global function calls are not allowed while holding a lock,\nuse static function instead")
		}
		return v.callGlobal(pc, sub) // global.go
	}
	for _, f := range st.Frames {
		if f.Subprog == sub {
			return v.errorf(pc, "recursive call from insn %d to %d", pc, target)
		}
	}
	caller := st.cur()
	callee := &Frame{CallSite: pc, Subprog: sub, Number: len(st.Frames)}
	for r := isa.R1; r <= isa.R5; r++ {
		callee.Regs[r] = caller.Regs[r]
	}
	callee.Regs[10] = Reg{Type: PtrToStack, Frame: uint8(callee.Number), Scalar: Const(0)}
	st.pushFrame(callee)
	// The caller's argument registers are clobbered by the call.
	for r := isa.R1; r <= isa.R5; r++ {
		caller.Regs[r] = Reg{Type: NotInit}
	}
	if v.log.level > 0 {
		v.log.printf("caller:\n %s\ncallee:\n %s\n", v.frameString(caller), v.frameString(callee))
	}
	v.pc = target
	return nil
}

// checkStackDepth enforces the combined stack limit over every call chain,
// each frame rounded up to 16 bytes as the kernel does for JITed programs.
// A callback counts as a call from the function that takes its address, as
// in the kernel. A subprogram that tail-calls keeps its callers' frames
// while the target runs (and the target may tail-call again): the callers
// may use less than maxTailCallStack between them. No function a callback
// reaches may tail-call: the target would return into the helper that
// called back, through frames it does not know of.
func (v *verifier) checkStackDepth() error {
	depth := func(sub int) int { return (v.subs[sub].StackDepth + 15) &^ 15 }
	var walk func(sub, total, frames int, inCallback bool) error
	walk = func(sub, total, frames int, inCallback bool) error {
		s := v.subs[sub]
		if inCallback && v.hasTailCall(s) {
			return v.errorf(s.Start, "cannot tail call within callback")
		}
		if frames > MaxCallFrames {
			// Global functions are not followed while exploring, so
			// only this walk sees how deep (or recursive) their calls
			// go. The kernel counts the frames above the entry's here.
			return v.errorf(s.Start, "the call stack of %d frames is too deep !", frames-1)
		}
		if sub != 0 && total >= maxTailCallStack && v.hasTailCall(s) {
			return v.errorf(s.Start, "tail_calls are not allowed when call stack of previous frames is %d bytes. Too large", total)
		}
		total += depth(sub)
		if total > MaxStack {
			return v.errorf(s.Start, "combined stack size of %d calls is %d. Too large", frames, total)
		}
		for pc := s.Start; pc < s.End; pc++ {
			if ins := v.insns[pc]; ins.IsLocalCall() || ins.IsPseudoFunc() {
				if err := walk(subprogAt(v.subs, pc+1+int(ins.Imm)), total, frames+1, inCallback || ins.IsPseudoFunc()); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(0, 0, 1, false)
}

// maxTailCallStack bounds the stack of the frames below a subprogram that
// tail-calls: with up to 33 tail calls, at most about 8 KiB in all.
const maxTailCallStack = 256

// hasTailCall reports whether the function s calls bpf_tail_call.
func (v *verifier) hasTailCall(s subprog) bool {
	for pc := s.Start; pc < s.End; pc++ {
		if ins := v.insns[pc]; ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) {
			if p := v.proto(ins.Imm); p != nil && p.TailCall {
				return true
			}
		}
	}
	return false
}

func (v *verifier) checkExit(pc int) (bool, error) {
	st := v.cur
	f := st.cur()
	r0 := &f.Regs[0]
	if r0.Type == NotInit && (len(st.Frames) == 1 || f.Callback) {
		// A static function may return nothing: the kernel complains
		// only where its caller reads R0.
		return false, v.errorf(pc, "R0 !read_ok")
	}
	if len(st.Frames) > 1 && r0.Type == PtrToStack {
		// Only the callee's own stack dies, but the kernel refuses
		// every stack pointer, from callbacks too.
		return false, v.errorf(pc, "cannot return stack pointer to the caller")
	}
	if f.Callback {
		if r0.Type != ScalarValue {
			return false, v.errorf(pc, "At callback return the register R0 is not a known value (%s)", regTypeString(r0))
		}
		if r0.Smin < 0 || r0.Smax > 1 {
			return false, v.errorf(pc, "At callback return the register R0 has %s should have been in [0, 1]", r0.Scalar)
		}
		v.markRegPrecise(isa.R0)
		// Back to the helper call, which may call the callback again.
		st.popFrame()
		st.callbackIter++
		v.pc = f.CallSite
		// Scalars that are imprecise and changed since the previous
		// round are forgotten (the kernel's widen_imprecise_scalars at
		// a callback's return), so that the loop converges.
		if prev := v.prevCallbackRound(f.CallSite); prev != nil {
			widenImprecise(prev, st)
		}
		return false, nil
	}
	if len(st.Frames) > 1 {
		if v.opts.Unprivileged && r0.Type.IsPointer() {
			return false, v.errorf(pc, "R0 leaks addr as return value")
		}
		st.popFrame()
		caller := st.cur()
		caller.Regs[0] = *r0
		if v.log.level > 0 {
			v.log.printf("returning from callee:\n %s\nto caller at %d:\n %s\n", v.frameString(f), f.CallSite+1, v.frameString(caller))
		}
		v.pc = f.CallSite + 1
		return false, nil
	}
	if v.opts.Unprivileged && r0.Type.IsPointer() {
		return false, v.errorf(pc, "R0 leaks addr as return value")
	}
	if err := v.checkLockLeak(pc, "BPF_EXIT instruction in main prog"); err != nil {
		return false, err
	}
	if len(st.Refs) > 0 {
		r := st.Refs[0]
		return false, v.errorf(pc, "Unreleased reference id=%d alloc_insn=%d", r.ID, r.Insn)
	}
	if err := v.checkSectionLeak(pc, "BPF_EXIT instruction in main prog"); err != nil {
		return false, err
	}
	if f.Subprog != 0 && f.Subprog != v.excb {
		// A global function verified on its own: its callers take any
		// scalar, whatever the program type allows at its exit.
		if r0.Type != ScalarValue {
			return false, v.errorf(pc, "At subprogram exit the register R0 is not a scalar value (%s)", regTypeString(r0))
		}
		return true, nil
	}
	check, lo, hi, bits32 := v.pt.CheckReturn, v.pt.ReturnMin, v.pt.ReturnMax, false
	if tlo, thi, t32, tcheck, ok := v.returnRange(); ok {
		check, lo, hi, bits32 = tcheck, tlo, thi, t32
	}
	if check {
		if r0.Type != ScalarValue {
			return false, v.errorf(pc, "At program exit the register R0 is not a known value (%s)", regTypeString(r0))
		}
		// A 32-bit check (LSM hooks return an int) bounds the low half
		// only; the message names the 64-bit bounds all the same.
		out := r0.Smin < lo || r0.Smax > hi
		if bits32 {
			out = int64(r0.S32min) < lo || int64(r0.S32max) > hi
		}
		if out {
			return false, v.errorf(pc, "At program exit the register R0 has%s should have been in [%d, %d]", signedBounds(r0), lo, hi)
		}
		v.markRegPrecise(isa.R0)
	}
	return true, nil
}

// signedBounds describes a scalar by its signed bounds, as the kernel's
// verbose_invalid_scalar: the finite ones, or "unknown scalar value".
func signedBounds(r *Reg) string {
	var b strings.Builder
	if r.Smin > math.MinInt64 {
		fmt.Fprintf(&b, " smin=%d", r.Smin)
	}
	if r.Smax < math.MaxInt64 {
		fmt.Fprintf(&b, " smax=%d", r.Smax)
	}
	if b.Len() == 0 {
		return " unknown scalar value"
	}
	return b.String()
}
