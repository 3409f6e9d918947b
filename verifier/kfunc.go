package verifier

import (
	"fmt"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
)

// checkKfuncCall verifies a call of a kernel function (src 2, the immediate
// is bpfvm's kfunc id, isa.Kfunc*) as the kernel's check_kfunc_call: the
// kfunc must be in the registry (helper.LookupKfunc) and in a kfunc set of
// the program's type, its arguments match its prototype (kfuncargs.go),
// and its flags say what the call does to references, RCU sections and
// R0. The number iterator and the casts keep rules of their own, as the
// kernel special-cases them.
func (v *verifier) checkKfuncCall(pc int, id int32) error {
	if err := v.checkCallInLock(pc, id, true); err != nil {
		return err
	}
	name := isa.KfuncName(id)
	k := helper.LookupKfunc(id)
	if k == nil || v.opts.Unprivileged || !k.Allowed(v.pt) {
		// The kernel lets only CAP_BPF loads call kernel functions, and
		// only those of the program type's kfunc sets.
		return v.errorf(pc, "calling kernel function %s is not allowed", kfuncText(id, name))
	}
	switch id {
	case isa.KfuncCastToKernCtx:
		return v.castToKernCtx(pc)
	case isa.KfuncRdonlyCast:
		return v.rdonlyCast(pc)
	case isa.KfuncIterNumNew, isa.KfuncIterNumNext, isa.KfuncIterNumDestroy:
		return v.iterNumCall(pc, id)
	case isa.KfuncArenaAlloc, isa.KfuncArenaFree:
		return v.arenaKfunc(pc, id) // arena.go
	}
	if isDynptrKfunc(id) {
		return v.checkDynptrKfunc(pc, id) // dynptr.go
	}
	proto, err := v.kfuncProto(pc, k)
	if err != nil {
		return err
	}
	sleepable := k.Flags&helper.KfSleepable != 0
	if sleepable && !v.sleepable {
		return v.errorf(pc, "program must be sleepable to call sleepable kfunc %s", name)
	}
	if k.Flags&helper.KfRCUProtected != 0 && !v.cur.RCULock {
		return v.errorf(pc, "kernel func %s requires RCU critical section protection", name)
	}
	meta, err := v.checkKfuncArgs(pc, k, proto)
	if err != nil {
		return err
	}
	st := v.cur
	switch id {
	case isa.KfuncRCUReadLock:
		if st.RCULock {
			return v.errorf(pc, "nested rcu read lock (kernel function %s)", name)
		}
		st.RCULock = true
	case isa.KfuncRCUReadUnlock:
		if !st.RCULock {
			return v.errorf(pc, "unmatched rcu read unlock (kernel function %s)", name)
		}
		st.RCULock = false
		// What RCU protected is no longer safe to pass on.
		st.forEachReg(func(r *Reg) bool { return r.Type == PtrToBTFID && r.Flags&RCU != 0 }, func(r *Reg) {
			r.Flags = r.Flags&^(RCU|MaybeNull) | Untrusted
		})
	case isa.KfuncPreemptDisable:
		st.PreemptDepth++
	case isa.KfuncPreemptEnable:
		if st.PreemptDepth == 0 {
			return v.errorf(pc, "unmatched attempt to enable preemption (kernel function %s)", name)
		}
		st.PreemptDepth--
	default:
		if sleepable {
			if err := v.sleepInSection(pc, name); err != nil {
				return err
			}
		}
	}
	if k.Flags&helper.KfRelease != 0 {
		if !st.releaseRef(meta.refObj) {
			return v.errorf(pc, "verifier internal error: release of an unacquired reference")
		}
	}
	f := st.cur()
	clearCallerSaved(f)
	r0, err := v.kfuncResult(pc, k, proto)
	if err != nil {
		return err
	}
	f.Regs[0] = r0
	return nil
}

// sleepInSection refuses a call of the sleepable kfunc name where the
// path may not sleep: inside bpf_rcu_read_lock or bpf_preempt_disable
// (check_kfunc_call, after the arguments).
func (v *verifier) sleepInSection(pc int, name string) error {
	if v.cur.RCULock {
		return v.errorf(pc, "kernel func %s is sleepable within rcu_read_lock region", name)
	}
	if v.cur.PreemptDepth > 0 {
		return v.errorf(pc, "kernel func %s is sleepable within non-preemptible region", name)
	}
	return nil
}

// kfuncResult is R0 after a call of k (the kernel's check_kfunc_call after
// the arguments): nothing for void, a scalar, or a pointer to a kernel
// struct, which KF_RET_NULL makes maybe-NULL and KF_ACQUIRE referenced.
func (v *verifier) kfuncResult(pc int, k *helper.Kfunc, proto *btf.FuncProto) (Reg, error) {
	ret := btf.UnderlyingType(proto.Return)
	switch ret.(type) {
	case *btf.Void:
		return Reg{Type: NotInit}, nil
	case *btf.Int, *btf.Enum:
		return unknownScalar(), nil
	}
	p, ok := ret.(*btf.Pointer)
	if !ok {
		return Reg{}, v.errorf(pc, "kernel function %s returns an unsupported type", k.Name)
	}
	target := btf.UnderlyingType(p.Target)
	if !isStructType(target) {
		return Reg{}, v.errorf(pc, "kernel function %s returns pointer type %s %s is not supported", k.Name, kindName(target), target.TypeName())
	}
	t, err := v.kfuncStruct(target)
	if err != nil {
		return Reg{}, v.errorf(pc, "%v", err)
	}
	r0 := v.btfPtr(t, 0)
	if k.Flags&helper.KfRetNull != 0 {
		r0.Flags |= MaybeNull
		r0.ID = v.newID()
	}
	if k.Flags&helper.KfAcquire != 0 {
		ref := v.newID()
		v.cur.Refs = append(v.cur.Refs, Ref{ID: ref, Insn: pc})
		r0.RefID = ref
		if r0.ID != 0 {
			r0.ID = ref
		}
	}
	return r0, nil
}

// kfuncProto is the prototype calls of k are checked against: the target
// BTF's for the function, as the kernel's, or else the one the registry
// declares (Kfunc.Decl). A kfunc of a kernel module is called only when
// the target BTF has it.
func (v *verifier) kfuncProto(pc int, k *helper.Kfunc) (*btf.FuncProto, error) {
	if v.opts.KernelTypes != nil {
		var fn *btf.Func
		if err := v.opts.KernelTypes.TypeByName(k.Name, &fn); err == nil {
			if fp, ok := fn.Type.(*btf.FuncProto); ok {
				return fp, nil
			}
		}
	}
	if k.Module != "" {
		return nil, v.errorf(pc, "kernel function %s of module %s is not in the target BTF", k.Name, k.Module)
	}
	return k.DeclProto(), nil
}

// kfuncStruct resolves a struct of a kfunc prototype in the target BTF:
// the declared prototypes' structs are opaque ones named as the kernel's;
// a struct the target BTF lacks stays opaque.
func (v *verifier) kfuncStruct(t btf.Type) (btf.Type, error) {
	if v.opts.KernelTypes == nil {
		return t, nil
	}
	var s *btf.Struct
	if st, ok := t.(*btf.Struct); ok && len(st.Members) == 0 && st.Size == 0 {
		if err := v.opts.KernelTypes.TypeByName(st.Name, &s); err == nil {
			return s, nil
		}
	}
	return t, nil
}

// iterNumCall verifies a call of bpf_iter_num_new, _next or _destroy.
func (v *verifier) iterNumCall(pc int, id int32) error {
	f := v.cur.cur()
	it, err := v.readReg(pc, isa.R1)
	if err != nil {
		return err
	}
	switch id {
	case isa.KfuncIterNumNew:
		for _, r := range []isa.Register{isa.R2, isa.R3} {
			reg, err := v.readReg(pc, r)
			if err != nil {
				return err
			}
			if reg.Type != ScalarValue {
				return v.errorf(pc, "R%d is not a scalar", r)
			}
		}
		slot, err := v.iterSlot(pc, it)
		if err != nil {
			return err
		}
		if slot.Types[0] == StackIter {
			return v.errorf(pc, "expected uninitialized iter_num as arg #0")
		}
		ref := v.newID()
		v.cur.Refs = append(v.cur.Refs, Ref{ID: ref, Insn: pc})
		*slot = Slot{Iter: IterSlot{Ref: ref, State: IterActive}}
		for i := range slot.Types {
			slot.Types[i] = StackIter
		}
		clearCallerSaved(f)
		f.Regs[0] = unknownScalar()
		return nil
	case isa.KfuncIterNumNext:
		slot, err := v.initializedIter(pc, it)
		if err != nil {
			return err
		}
		return v.iterNext(pc, slot)
	}
	slot, err := v.initializedIter(pc, it)
	if err != nil {
		return err
	}
	if !v.cur.releaseRef(slot.Iter.Ref) {
		return v.errorf(pc, "verifier internal error: iterator without a reference")
	}
	*slot = Slot{}
	clearCallerSaved(f)
	f.Regs[0] = Reg{Type: NotInit}
	return nil
}

// castToKernCtx verifies bpf_cast_to_kern_ctx(ctx): R0 becomes a trusted
// pointer to the kernel's struct behind the program type's context (the
// last of progtype.Type.ContextNames: struct xdp_buff for struct xdp_md,
// struct sk_buff for struct __sk_buff).
func (v *verifier) castToKernCtx(pc int) error {
	ctx, err := v.readReg(pc, isa.R1)
	if err != nil {
		return err
	}
	if ctx.Type == ScalarValue && ctx.IsConst() && ctx.Const() == 0 {
		// Linux 6.18.44 takes kfunc pointer arguments as trusted,
		// and a trusted one may not be NULL.
		return v.errorf(pc, "Possibly NULL pointer passed to trusted arg0")
	}
	if ctx.Type != PtrToCtx {
		return v.errorf(pc, "arg#0 expected pointer to ctx, but got %s", regTypeString(ctx))
	}
	if err := v.checkPtrOffReg(pc, isa.R1, ctx, false); err != nil {
		return err
	}
	if v.pt.BTFArgs {
		// The kernel context of tracing programs is void *, which
		// bpf_ctx_convert records.
		return v.errorf(pc, "kern ctx type id %d is not a struct", v.convertMember("BPF_PROG_TYPE_TRACING_kern"))
	}
	names := v.pt.ContextNames
	if len(names) == 0 {
		return v.errorf(pc, "bpf_cast_to_kern_ctx: program type %s has no kernel context type", v.pt.Name)
	}
	t, err := v.kernelStruct(names[len(names)-1])
	if err != nil {
		return v.errorf(pc, "bpf_cast_to_kern_ctx: %v", err)
	}
	f := v.cur.cur()
	clearCallerSaved(f)
	f.Regs[0] = v.btfPtr(t, Trusted)
	return nil
}

// rdonlyCast verifies bpf_rdonly_cast(obj, btf_id): R0 becomes an
// untrusted pointer to the kernel type with the constant id btf_id, a
// struct (PtrToBTFID) or void (read-only untrusted memory). obj is not
// checked: it may be any value, loads through the result being probe
// loads.
func (v *verifier) rdonlyCast(pc int) error {
	idReg, err := v.readReg(pc, isa.R2)
	if err != nil {
		return err
	}
	if idReg.Type != ScalarValue {
		return v.errorf(pc, "R2 is not a scalar")
	}
	if !idReg.IsConst() {
		return v.errorf(pc, "R2 must be a known constant")
	}
	v.markRegPrecise(isa.R2)
	id := idReg.Const()
	if v.opts.KernelTypes == nil {
		return v.errorf(pc, "bpf_rdonly_cast: no kernel BTF to find type ID %d in", id)
	}
	var t btf.Type
	if id <= 1<<32-1 {
		t, err = v.opts.KernelTypes.TypeByID(btf.TypeID(id))
	}
	if t == nil || err != nil {
		return v.errorf(pc, "Unknown type ID %d passed to kfunc bpf_rdonly_cast", id)
	}
	var r0 Reg
	switch {
	case isStructType(t):
		r0 = v.btfPtr(t, Untrusted)
	case isVoid(t):
		r0 = Reg{Type: PtrToMem, Flags: Rdonly | Untrusted, Scalar: Const(0)}
	default:
		return v.errorf(pc, "kfunc bpf_rdonly_cast type ID argument must be of a struct or void")
	}
	f := v.cur.cur()
	clearCallerSaved(f)
	f.Regs[0] = r0
	return nil
}

// convertMember returns the type id of the member name of the kernel's
// struct bpf_ctx_convert (the program types' contexts), 0 if there is none.
func (v *verifier) convertMember(name string) btf.TypeID {
	var s *btf.Struct
	if v.opts.KernelTypes == nil || v.opts.KernelTypes.TypeByName("bpf_ctx_convert", &s) != nil {
		return 0
	}
	for _, m := range s.Members {
		if m.Name == name {
			id, _ := v.opts.KernelTypes.TypeID(m.Type)
			return id
		}
	}
	return 0
}

// isVoid reports whether t is void.
func isVoid(t btf.Type) bool {
	_, ok := t.(*btf.Void)
	return ok
}

// kernelStruct finds the kernel's struct called name in
// Options.KernelTypes.
func (v *verifier) kernelStruct(name string) (btf.Type, error) {
	if v.opts.KernelTypes == nil {
		return nil, fmt.Errorf("no kernel BTF to find struct %s in", name)
	}
	var s *btf.Struct
	if err := v.opts.KernelTypes.TypeByName(name, &s); err != nil {
		return nil, fmt.Errorf("struct %s: %w", name, err)
	}
	return s, nil
}

// kfuncText names a kfunc in messages.
func kfuncText(id int32, name string) string {
	if name == "" {
		return fmt.Sprint(id)
	}
	return name
}

// clearCallerSaved marks R1-R5 unreadable after a call.
func clearCallerSaved(f *Frame) {
	for r := isa.R1; r <= isa.R5; r++ {
		f.Regs[r] = Reg{Type: NotInit}
	}
}
