package verifier

import (
	"fmt"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

// Allocated objects and their graphs, as the kernel's check_kfunc_call and
// check_kfunc_args special-case them: bpf_obj_new gives an owning
// reference (PtrToBTFID | Alloc, referenced) to an object of the
// program's own BTF type (Options.LocalTypes); bpf_obj_drop releases it;
// pushing it into a list or adding it to an rbtree turns every copy into
// a non-owning reference (NonOwn, no reference), valid while the root's
// bpf_spin_lock stays held: bpf_spin_unlock invalidates them
// (invalidate_non_owning_refs); popping or removing gives an owning
// reference back. Every graph call needs the lock of the value (or
// object) holding the root, and a node must be the root's "contains:"
// struct at its node member.

// isGraphKfunc reports whether id is a kfunc of allocated objects or their
// graphs (isa.KfuncObjNew to isa.KfuncRbtreeRight).
func isGraphKfunc(id int32) bool { return id >= isa.KfuncObjNew && id <= isa.KfuncRbtreeRight }

// graphLockAllowed reports whether a kfunc may be called holding a
// bpf_spin_lock (the kernel's kfunc_spin_allowed: the graph API, with
// bpf_refcount_acquire).
func graphLockAllowed(id int32) bool {
	return id >= isa.KfuncRefcountAcquire && id <= isa.KfuncRbtreeRight
}

// GraphCall is what the rewrite passes to a graph kfunc call
// (rewrite.GraphArgs), as the kernel's fixup_kfunc_call: the handle of
// bpf_obj_new's object type (maps.RegisterObjType) for R1, or the node's
// offset in its object for the last argument of a push or add.
type GraphCall struct {
	ObjType uint64
	NodeOff int32
}

// objFields returns the special fields of an allocated object of type t.
func (v *verifier) objFields(t btf.Type) ([]maps.Field, error) {
	if fs, ok := v.objRecords[t]; ok {
		return fs, nil
	}
	st, ok := btf.UnderlyingType(t).(*btf.Struct)
	if !ok {
		return nil, fmt.Errorf("type %s is not a struct", typeName(t))
	}
	fs, err := maps.ObjectFields(st, v.localStruct)
	if err != nil {
		return nil, err
	}
	if v.objRecords == nil {
		v.objRecords = map[btf.Type][]maps.Field{}
	}
	v.objRecords[t] = fs
	return fs, nil
}

// localStruct finds a struct of the program's BTF by name (the contains:
// tags of an object's own graph roots).
func (v *verifier) localStruct(name string) *btf.Struct {
	for _, t := range v.opts.LocalTypes {
		var found *btf.Struct
		maps.WalkStructs(t, func(st *btf.Struct) bool {
			if st.Name == name {
				found = st
				return false
			}
			return true
		})
		if found != nil {
			return found
		}
	}
	return nil
}

// regRecord returns the special fields of what a map value or allocated
// object pointer points into (reg_btf_record).
func (v *verifier) regRecord(reg *Reg) []maps.Field {
	switch {
	case reg.Type == PtrToMapValue:
		return v.mapFields(reg.Map)
	case reg.Type == PtrToBTFID && reg.Flags&Alloc != 0:
		fs, _ := v.objFields(v.btfType(reg))
		return fs
	}
	return nil
}

// isOwning reports whether reg is an owning reference to an allocated
// object (the kernel's PTR_TO_BTF_ID | MEM_ALLOC exactly, referenced or
// not).
func isAllocObj(reg *Reg) bool {
	return reg.Type == PtrToBTFID && reg.Flags&(Alloc|NonOwn|MaybeNull|Untrusted|Rdonly|RCU|Trusted) == Alloc
}

// isNonOwning reports whether reg is a non-owning reference.
func isNonOwning(reg *Reg) bool {
	return reg.Type == PtrToBTFID && reg.Flags&(Alloc|NonOwn) == Alloc|NonOwn && reg.RefID == 0
}

// sameLocal reports whether two program types are the same struct: the
// same object, or of the same name and size (a map's BTF and a
// program's are copies of one object's types).
func sameLocal(a, b btf.Type) bool {
	if a == b {
		return true
	}
	as, ok1 := btf.UnderlyingType(a).(*btf.Struct)
	bs, ok2 := btf.UnderlyingType(b).(*btf.Struct)
	return ok1 && ok2 && as.Name == bs.Name && as.Size == bs.Size && len(as.Members) == len(bs.Members)
}

// graphArgs reads the arguments of a graph kfunc, R1 to Rn.
func (v *verifier) graphArgs(pc int, n int) error {
	for i := 1; i <= n; i++ {
		if _, err := v.readReg(pc, isa.Register(i)); err != nil {
			return err
		}
	}
	return nil
}

// graphNull refuses a NULL or maybe-NULL pointer argument.
func (v *verifier) graphNull(pc int, i int, reg *Reg) error {
	if isNullReg(reg) || reg.maybeNull() {
		return v.errorf(pc, "Possibly NULL pointer passed to trusted arg%d", i)
	}
	return nil
}

// graphRootArg checks a list head or rbtree root argument in R1
// (__process_kf_arg_ptr_to_graph_root): in a map value or an owned
// allocated object, at a constant offset where a root of the kind is,
// with the bpf_spin_lock of its value held.
func (v *verifier) graphRootArg(pc int, kind maps.FieldKind) (maps.Field, error) {
	reg := &v.cur.cur().Regs[isa.R1]
	if err := v.graphNull(pc, 0, reg); err != nil {
		return maps.Field{}, err
	}
	alloc := reg.Type == PtrToBTFID && reg.Flags&(Alloc|NonOwn|MaybeNull) == Alloc
	if reg.Type != PtrToMapValue && !alloc {
		return maps.Field{}, v.errorf(pc, "arg#0 expected pointer to map value or allocated object")
	}
	if alloc && reg.RefID == 0 {
		return maps.Field{}, v.errorf(pc, "allocated object must be referenced")
	}
	name := kind.String()
	if !reg.Scalar.Var.IsConst() {
		return maps.Field{}, v.errorf(pc, "R1 doesn't have constant offset. %s has to be at the constant offset", name)
	}
	rec := v.regRecord(reg)
	off := uint32(int64(reg.Off) + int64(reg.Scalar.Var.Value))
	field, ok := maps.FieldAt(rec, off)
	if !ok || field.Kind != kind {
		return maps.Field{}, v.errorf(pc, "%s not found at offset=%d", name, off)
	}
	lockOff := -1
	for _, f := range rec {
		if f.Kind == maps.SpinLock {
			lockOff = int(f.Offset)
		}
	}
	held := v.cur.heldLock()
	if held == nil || alloc || held.ID != reg.ID || held.Lock != reg.Map {
		if held != nil {
			v.log.printf("held lock and object are not in the same allocation\n")
		}
		return maps.Field{}, v.errorf(pc, "bpf_spin_lock at off=%d must be held for %s", lockOff, name)
	}
	if field.Contains == nil {
		return maps.Field{}, v.errorf(pc, "verifier internal error: %s without its contained type", name)
	}
	return field, nil
}

// graphNodeArg checks a node argument in R2 for the root field
// (__process_kf_arg_ptr_to_graph_node): owning (bpf_list_push_*,
// bpf_rbtree_add) or non-owning (bpf_rbtree_remove, _left, _right), the
// root's contained struct at its node member.
func (v *verifier) graphNodeArg(pc int, name string, root maps.Field, owning bool) error {
	reg := &v.cur.cur().Regs[isa.R2]
	if err := v.graphNull(pc, 1, reg); err != nil {
		return err
	}
	if owning {
		if !isAllocObj(reg) {
			return v.errorf(pc, "arg#1 expected pointer to allocated object")
		}
		if reg.RefID == 0 {
			return v.errorf(pc, "allocated object must be referenced")
		}
	} else {
		// An owning reference may name a refcounted object another
		// reference keeps in the tree.
		if !isNonOwning(reg) && reg.RefID == 0 {
			return v.errorf(pc, "%s can only take non-owning or refcounted bpf_rb_node pointer", name)
		}
		if v.inRbtreeCallback() {
			return v.errorf(pc, "%s not allowed in rbtree cb", name)
		}
	}
	nodeKind := maps.ListNode
	if root.Kind == maps.RBRoot {
		nodeKind = maps.RBNode
	}
	if !reg.Scalar.Var.IsConst() {
		return v.errorf(pc, "R2 doesn't have constant offset. %s has to be at the constant offset", nodeKind)
	}
	off := uint32(int64(reg.Off) + int64(reg.Scalar.Var.Value))
	rec := v.regRecord(reg)
	if f, ok := maps.FieldAt(rec, off); !ok || f.Kind != nodeKind || reg.Type != PtrToBTFID {
		return v.errorf(pc, "%s not found at offset=%d", nodeKind, off)
	}
	have := v.btfType(reg)
	if !sameLocal(have, root.Contains) {
		return v.errorf(pc, "operation on %s expects arg#1 %s at offset=%d in struct %s, but arg is at offset=%d in struct %s",
			root.Kind, nodeKind, root.NodeOff, root.Contains.Name, off, typeName(have))
	}
	if off != root.NodeOff {
		return v.errorf(pc, "arg#1 offset=%d, but expected %s at offset=%d in struct %s", off, nodeKind, root.NodeOff, root.Contains.Name)
	}
	return nil
}

// inRbtreeCallback reports whether the function being verified is an
// rbtree_add less callback (in_rbtree_lock_required_cb).
func (v *verifier) inRbtreeCallback() bool {
	f := v.cur.cur()
	return f.Callback && v.insns[f.CallSite].Src == isa.Register(isa.CallKfunc) && v.insns[f.CallSite].Imm == isa.KfuncRbtreeAdd
}

// graphNode is a pointer to the node member of an object of root's
// contained struct (mark_reg_graph_node).
func (v *verifier) graphNode(root maps.Field, flags uint8) Reg {
	r := v.btfPtr(root.Contains, Alloc|flags)
	r.Off = int32(root.NodeOff)
	return r
}

// noteGraphCall records what the rewrite passes to the call at pc; paths
// must agree.
func (v *verifier) noteGraphCall(pc int, c GraphCall) error {
	aux := &v.aux[pc]
	if aux.Graph != nil && *aux.Graph != c {
		return v.errorf(pc, "verifier internal error: the call's object type or node offset differs between paths")
	}
	aux.Graph = &c
	return nil
}

// graphKfunc verifies a call of a graph kfunc k (id).
func (v *verifier) graphKfunc(pc int, id int32, k *helper.Kfunc) error {
	st := v.cur
	f := st.cur()
	nargs := map[int32]int{
		isa.KfuncObjNew: 2, isa.KfuncObjDrop: 2, isa.KfuncRefcountAcquire: 2,
		isa.KfuncListPushFront: 4, isa.KfuncListPushBack: 4,
		isa.KfuncRbtreeAdd: 5, isa.KfuncRbtreeRemove: 2, isa.KfuncRbtreeLeft: 2, isa.KfuncRbtreeRight: 2,
	}[id]
	if nargs == 0 {
		nargs = 1
	}
	if err := v.graphArgs(pc, nargs); err != nil {
		return err
	}
	var r0 Reg
	switch id {
	case isa.KfuncObjNew:
		c := &f.Regs[isa.R1]
		if c.Type != ScalarValue {
			return v.errorf(pc, "R1 is not a scalar")
		}
		if !c.IsConst() {
			return v.errorf(pc, "R1 must be a known constant")
		}
		v.markRegPrecise(isa.R1)
		tid := c.Const()
		if tid != uint64(uint32(tid)) {
			return v.errorf(pc, "local type ID argument must be in range [0, U32_MAX]")
		}
		if v.opts.LocalTypes == nil {
			return v.errorf(pc, "bpf_obj_new/bpf_percpu_obj_new requires prog BTF")
		}
		t := v.opts.LocalTypes[btf.TypeID(tid)]
		st, ok := t.(*btf.Struct)
		if t == nil || !ok {
			return v.errorf(pc, "bpf_obj_new/bpf_percpu_obj_new type ID argument must be of a struct")
		}
		fs, err := v.objFields(st)
		if err != nil {
			return v.errorf(pc, "bpf_obj_new of struct %s: %v", st.Name, err)
		}
		if err := v.noteGraphCall(pc, GraphCall{ObjType: maps.RegisterObjType(st.Size, fs)}); err != nil {
			return err
		}
		r0 = v.btfPtr(st, Alloc)
	case isa.KfuncObjDrop:
		reg := &f.Regs[isa.R1]
		if err := v.graphNull(pc, 0, reg); err != nil {
			return err
		}
		if !isTrustedReg(reg) {
			return v.errorf(pc, "R1 must be referenced or trusted")
		}
		if !isAllocObj(reg) {
			return v.errorf(pc, "arg#0 expected pointer to allocated object")
		}
		if reg.RefID == 0 {
			return v.errorf(pc, "allocated object must be referenced")
		}
		if reg.Off != 0 {
			return v.errorf(pc, "R1 must have zero offset when passed to release func or trusted arg to kfunc")
		}
		if err := v.checkPtrOffReg(pc, isa.R1, reg, false); err != nil {
			return err
		}
		if !st.releaseRef(reg.RefID) {
			return v.errorf(pc, "verifier internal error: release of an unacquired reference")
		}
		clearCallerSaved(f)
		f.Regs[0] = Reg{Type: NotInit}
		return nil
	case isa.KfuncRefcountAcquire:
		reg := &f.Regs[isa.R1]
		if err := v.graphNull(pc, 0, reg); err != nil {
			return err
		}
		if !isAllocObj(reg) && !isNonOwning(reg) {
			return v.errorf(pc, "arg#0 is neither owning or non-owning ref")
		}
		rec, _ := v.objFields(v.btfType(reg))
		if !hasField(rec, maps.Refcount) {
			return v.errorf(pc, "arg#0 doesn't point to a type with bpf_refcount field")
		}
		if err := v.checkPtrOffReg(pc, isa.R1, reg, true); err != nil {
			return err
		}
		r0 = v.btfPtr(v.btfType(reg), Alloc)
		r0.Off = reg.Off
	case isa.KfuncListPushFront, isa.KfuncListPushBack, isa.KfuncRbtreeAdd:
		kind := maps.ListHead
		if id == isa.KfuncRbtreeAdd {
			kind = maps.RBRoot
		}
		root, err := v.graphRootArg(pc, kind)
		if err != nil {
			return err
		}
		if err := v.graphNodeArg(pc, k.Name, root, true); err != nil {
			return err
		}
		node := f.Regs[isa.R2]
		if id == isa.KfuncRbtreeAdd {
			less := &f.Regs[isa.R3]
			if less.Type != PtrToFunc {
				return v.errorf(pc, "arg2 expected pointer to func")
			}
			if err := v.noteGraphCall(pc, GraphCall{NodeOff: int32(root.NodeOff)}); err != nil {
				return err
			}
			// The callback's arguments: non-owning references to
			// objects of the tree's type (set_rbtree_add_callback_state).
			v.cbArg = v.graphNode(root, NonOwn)
			if err := v.queueCallback(pc, k.Name, int(less.Subprog), nil); err != nil {
				return err
			}
			f = st.cur()
		} else if err := v.noteGraphCall(pc, GraphCall{NodeOff: int32(root.NodeOff)}); err != nil {
			return err
		}
		// Every copy of the node becomes non-owning and the reference
		// goes (ref_convert_owning_non_owning, release_reference).
		ref := node.RefID
		st.forEachReg(func(r *Reg) bool { return r.RefID == ref }, func(r *Reg) {
			r.RefID = 0
			r.Flags |= NonOwn
			if r.ID == ref {
				r.ID = 0
			}
		})
		if !st.releaseRef(ref) {
			return v.errorf(pc, "kfunc %s#%d reference has not been acquired before", k.Name, id)
		}
		clearCallerSaved(f)
		f.Regs[0] = unknownScalar()
		return nil
	case isa.KfuncListPopFront, isa.KfuncListPopBack, isa.KfuncListFront, isa.KfuncListBack:
		root, err := v.graphRootArg(pc, maps.ListHead)
		if err != nil {
			return err
		}
		r0 = v.graphNode(root, 0)
		if id == isa.KfuncListFront || id == isa.KfuncListBack {
			r0.Flags |= NonOwn
		}
	case isa.KfuncRbtreeFirst, isa.KfuncRbtreeRoot:
		root, err := v.graphRootArg(pc, maps.RBRoot)
		if err != nil {
			return err
		}
		r0 = v.graphNode(root, NonOwn)
	case isa.KfuncRbtreeRemove, isa.KfuncRbtreeLeft, isa.KfuncRbtreeRight:
		root, err := v.graphRootArg(pc, maps.RBRoot)
		if err != nil {
			return err
		}
		if err := v.graphNodeArg(pc, k.Name, root, false); err != nil {
			return err
		}
		r0 = v.graphNode(root, 0)
		if id != isa.KfuncRbtreeRemove {
			r0.Flags |= NonOwn
		}
	}
	clearCallerSaved(f)
	// KF_RET_NULL and KF_ACQUIRE, as every kfunc.
	if k.Flags&helper.KfRetNull != 0 {
		r0.Flags |= MaybeNull
		r0.ID = v.newID()
	}
	if k.Flags&helper.KfAcquire != 0 {
		ref := v.newID()
		st.Refs = append(st.Refs, Ref{ID: ref, Insn: pc})
		r0.RefID = ref
		if r0.ID != 0 {
			r0.ID = ref
		}
	}
	f.Regs[0] = r0
	return nil
}

// invalidateNonOwning makes every non-owning reference unusable, at the
// release of the lock that protected them (invalidate_non_owning_refs).
func (st *State) invalidateNonOwning() {
	st.forEachReg(func(r *Reg) bool { return r.Type == PtrToBTFID && r.Flags&NonOwn != 0 }, func(r *Reg) {
		*r = unknownScalar()
	})
}

// allocAccess checks the bytes an access through an allocated object's
// pointer touches against the object's special fields, which only kfuncs
// may touch (btf_struct_access's "direct access").
func (v *verifier) allocAccess(ptr *Reg, a access, off int64) error {
	rec, _ := v.objFields(v.btfType(ptr))
	for _, f := range rec {
		if off < int64(f.Offset)+int64(f.Size) && int64(f.Offset) < off+int64(a.size) {
			return v.errorf(a.pc, "direct access to %s is disallowed", f.Kind)
		}
	}
	return nil
}
