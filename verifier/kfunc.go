package verifier

import (
	"fmt"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
)

// checkKfuncCall verifies a call of a kernel function (src 2, the immediate
// is bpfvm's kfunc id, isa.Kfunc*). bpfvm knows the open-coded number
// iterator's three functions and the casts to kernel types; any other id
// is rejected as the kernel rejects a kfunc it cannot find.
func (v *verifier) checkKfuncCall(pc int, id int32) error {
	if err := v.checkCallInLock(pc, id, true); err != nil {
		return err
	}
	name := isa.KfuncName(id)
	if name == "" || v.opts.Unprivileged {
		// The kernel lets only CAP_BPF loads call kernel functions.
		return v.errorf(pc, "calling kernel function %s is not allowed", kfuncText(id, name))
	}
	switch id {
	case isa.KfuncCastToKernCtx:
		return v.castToKernCtx(pc)
	case isa.KfuncRdonlyCast:
		return v.rdonlyCast(pc)
	case isa.KfuncArenaAlloc, isa.KfuncArenaFree:
		return v.arenaKfunc(pc, id) // arena.go
	}
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
	case isa.KfuncIterNumDestroy:
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
	return v.errorf(pc, "calling kernel function %s is not allowed", kfuncText(id, name))
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
