package verifier

import (
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

// Special fields of map values (maps.Field): locks, timers, kernel pointers
// and the other objects the runtime owns inside a value. Programs reach
// them only through the helpers and kfuncs made for them; a load or store
// touching one, directly or through a helper's memory argument, is
// refused as the kernel's check_map_access does, and the kernel pointer
// fields (kptrs) take only the accesses check_map_kptr_access allows.
//
// A kptr load gives a PtrToBTFID to the pointee's kernel type, which may
// be NULL (the kernel's btf_ld_kptr_type). Programs load a kptr's value
// as a plain word: it is whatever a program stored, and loads through it
// are probe loads (Probe), so a stale or bogus pointer reads zeros rather
// than faulting.

// mapFields returns the special fields of a map's values, found once per
// value type: inner maps get a MapInfo per lookup verified.
func (v *verifier) mapFields(m *MapInfo) []maps.Field {
	if m.Spec.Value == nil {
		return nil
	}
	key := fieldsKey{m.Spec.Value, m.Spec.ValueSize}
	if fs, ok := v.fields[key]; ok {
		return fs
	}
	// A spec whose BTF the maps refuse has no map, so no program
	// reaches it; errors leave it without fields as the kernel's
	// record does.
	fs, _ := m.Spec.Fields()
	if v.fields == nil {
		v.fields = map[fieldsKey][]maps.Field{}
	}
	v.fields[key] = fs
	return fs
}

// fieldsKey identifies the values whose fields mapFields found.
type fieldsKey struct {
	value btf.Type
	size  uint32
}

// checkFieldAccess checks an access to a map value that passed the bounds
// check against the value's special fields (the kernel's check_map_access
// and check_map_kptr_access). It returns what a load of a kptr gives, a
// register of type NotInit for any other access.
func (v *verifier) checkFieldAccess(ptr *Reg, a access) (Reg, error) {
	fields := v.mapFields(ptr.Map)
	if len(fields) == 0 {
		return Reg{}, nil
	}
	s := ptr.Scalar
	off := int64(ptr.Off) + int64(a.off)
	// The access may touch [lo, hi); bounds were checked, so neither
	// overflows.
	lo, hi := off+s.Smin, off+int64(s.Umax)+int64(a.size)
	for _, f := range fields {
		p := int64(f.Offset)
		if lo >= p+int64(f.Size) || p >= hi {
			continue
		}
		if f.Kind&maps.AnyKptr == 0 {
			return Reg{}, v.errorf(a.pc, "%s cannot be accessed directly by load/store", f.Kind)
		}
		switch {
		case a.helper:
			return Reg{}, v.errorf(a.pc, "%s cannot be accessed indirectly by helper", f.Kind)
		case !s.Var.IsConst():
			return Reg{}, v.errorf(a.pc, "%s access cannot have variable offset", f.Kind)
		case p != off+int64(s.Var.Value):
			return Reg{}, v.errorf(a.pc, "%s access misaligned expected=%d off=%d", f.Kind, p, off+int64(s.Var.Value))
		case a.size != 8:
			return Reg{}, v.errorf(a.pc, "%s access size must be BPF_DW", f.Kind)
		}
	}
	if !s.Var.IsConst() {
		return Reg{}, nil
	}
	f, ok := maps.FieldAt(fields, uint32(off+int64(s.Var.Value)))
	if !ok || f.Kind&maps.AnyKptr == 0 {
		return Reg{}, nil
	}
	return v.checkKptrAccess(a, f)
}

// checkKptrAccess checks an access of a whole kernel pointer field (the
// kernel's check_map_kptr_access) and gives what a load yields: plain loads
// and stores only, no store into a referenced kptr, and into an untrusted
// one only NULL or a pointer to the pointee's type.
func (v *verifier) checkKptrAccess(a access, f maps.Field) (Reg, error) {
	ins := v.insns[a.pc]
	if ins.Op&0xe0 != isa.ModeMEM {
		return Reg{}, v.errorf(a.pc, "kptr in map can only be accessed using BPF_MEM instruction mode")
	}
	class := ins.Class()
	if class != isa.ClassLDX {
		switch f.Kind {
		case maps.Kptr, maps.PercpuKptr:
			return Reg{}, v.errorf(a.pc, "store to referenced kptr disallowed")
		case maps.Uptr:
			return Reg{}, v.errorf(a.pc, "store to uptr disallowed")
		}
	}
	switch class {
	case isa.ClassLDX:
		return v.kptrLoad(a, f)
	case isa.ClassSTX:
		val := a.val
		if val.Type == ScalarValue && val.IsConst() && val.Const() == 0 {
			return Reg{}, nil
		}
		return Reg{}, v.kptrMatch(a, f)
	case isa.ClassST:
		if ins.Imm != 0 {
			return Reg{}, v.errorf(a.pc, "BPF_ST imm must be 0 when storing to kptr at off=%d", f.Offset)
		}
		return Reg{}, nil
	}
	return Reg{}, v.errorf(a.pc, "kptr in map can only be accessed using BPF_LDX/BPF_STX/BPF_ST")
}

// kptrLoad is what loading kptr f gives (the kernel's mark_btf_ld_reg with
// btf_ld_kptr_type): a pointer to the pointee that may be NULL, with a
// fresh id for its null check. A referenced kptr of a type the kernel
// frees after an RCU grace period (rcuProtected) is RCU-protected where
// the program runs in an RCU read section (inRCU: those that are not
// sleepable, sleepable ones inside bpf_rcu_read_lock); the others are
// untrusted.
func (v *verifier) kptrLoad(a access, f maps.Field) (Reg, error) {
	switch f.Kind {
	case maps.Uptr:
		// The kernel gives memory of the pointee's size; bpfvm's maps
		// have no uptrs (task storage only).
		return Reg{}, v.errorf(a.pc, "R%d load of uptr at off=%d: bpfvm does not support uptrs", v.insns[a.pc].Dst, f.Offset)
	case maps.PercpuKptr:
		// The kernel's per-CPU RCU pointer (MEM_PERCPU), which bpfvm's
		// registers cannot express.
		return Reg{}, v.errorf(a.pc, "R%d load of percpu_kptr at off=%d: bpfvm does not support per-CPU kptrs", v.insns[a.pc].Dst, f.Offset)
	}
	t, err := v.kptrType(f)
	if err != nil {
		return Reg{}, v.errorf(a.pc, "R%d load of %s at off=%d: %v", v.insns[a.pc].Dst, f.Kind, f.Offset, err)
	}
	flags := MaybeNull | Untrusted
	if f.Kind == maps.Kptr && rcuProtected[f.Pointee] && v.inRCU() {
		flags = MaybeNull | RCU
	}
	return v.btfPtr(t, flags), nil
}

// rcuProtected are the kernel types whose objects are freed after an RCU
// grace period, so that a referenced kptr of one may be read without a
// reference (the kernel's rcu_protected_types).
var rcuProtected = map[string]bool{
	"prog_test_ref_kfunc": true,
	"cgroup":              true,
	"bpf_cpumask":         true,
	"task_struct":         true,
	"bpf_crypto_ctx":      true,
}

// kptrType finds the kernel struct kptr f points to, by name, as the
// kernel's btf_parse_kptr does when the map is created; once per
// verification.
func (v *verifier) kptrType(f maps.Field) (btf.Type, error) {
	if t, ok := v.kptrTypes[f.Pointee]; ok {
		return t, nil
	}
	t, err := v.kernelStruct(f.Pointee)
	if err != nil {
		return nil, err
	}
	if v.kptrTypes == nil {
		v.kptrTypes = map[string]btf.Type{}
	}
	v.kptrTypes[f.Pointee] = t
	return t, nil
}

// kptrMatch checks that a register stored into untrusted kptr f points to
// its pointee (the kernel's map_kptr_match_type): a kernel object of the
// pointee's type, or one embedding it at the pointer's offset, with no
// variable offset.
func (v *verifier) kptrMatch(a access, f maps.Field) error {
	val := a.val
	perm := MaybeNull | Trusted | RCU | Untrusted
	if val.Flags&Alloc != 0 {
		// An object of the program's own types (bpf_obj_new).
		perm = MaybeNull | Alloc
	}
	bad := func(name string) error {
		return v.errorf(a.pc, "invalid kptr access, R%d type=%s%s expected=ptr_%s or untrusted_ptr_%s", a.valReg, regTypeString(val), name, f.Pointee, f.Pointee)
	}
	if val.Type != PtrToBTFID || val.Flags&^perm != 0 {
		return bad("")
	}
	name := v.btfName(val)
	if val.Off < 0 {
		return v.errorf(a.pc, "negative offset %s ptr R%d off=%d disallowed", regTypeString(val), a.valReg, val.Off)
	}
	if !val.Scalar.Var.IsConst() || val.Scalar.Var.Value != 0 {
		return v.errorf(a.pc, "variable %s access var_off=%s disallowed", regTypeString(val), val.Scalar.Var)
	}
	want, err := v.kptrType(f)
	if err != nil || !structIDsMatch(v.btfType(val), uint32(val.Off), want) {
		return bad(name)
	}
	return nil
}

// structIDsMatch reports whether an object of type t, at off, is or
// starts with an object of type want (the kernel's btf_struct_ids_match
// when not strict): the struct embedded at off and then, at offset 0, its
// first members that are structs.
func structIDsMatch(t btf.Type, off uint32, want btf.Type) bool {
	if off == 0 && t == want {
		return true
	}
	for {
		var untrusted bool
		step, err := btfWalk(t, off, 1, &untrusted)
		if err != nil || step.res != walkStruct {
			return false
		}
		if step.next == want {
			return true
		}
		t, off = step.next, 0
	}
}

// kptrXchgDest checks bpf_kptr_xchg's destination (the kernel's
// process_kptr_func): a map value pointer at the constant offset of a
// referenced kptr field, which it returns.
func (v *verifier) kptrXchgDest(pc int, regno isa.Register, reg *Reg) (maps.Field, error) {
	if reg.Type != PtrToMapValue || reg.maybeNull() {
		return maps.Field{}, v.errorf(pc, "R%d type=%s expected=map_value", regno, regTypeString(reg))
	}
	m := reg.Map
	if m.Spec.Value == nil {
		return maps.Field{}, v.errorf(pc, "map '%s' has to have BTF in order to use bpf_kptr_xchg", m.Name)
	}
	fields := v.mapFields(m)
	if !hasField(fields, maps.Kptr) && !hasField(fields, maps.KptrUntrusted) && !hasField(fields, maps.PercpuKptr) {
		return maps.Field{}, v.errorf(pc, "map '%s' has no valid kptr", m.Name)
	}
	if !reg.Scalar.Var.IsConst() {
		return maps.Field{}, v.errorf(pc, "R%d doesn't have constant offset. kptr has to be at the constant offset", regno)
	}
	off := int64(reg.Off) + int64(reg.Scalar.Var.Value)
	f, ok := maps.FieldAt(fields, uint32(off))
	if !ok || off < 0 || int64(f.Offset) != off || f.Kind&maps.AnyKptr == 0 {
		return maps.Field{}, v.errorf(pc, "off=%d doesn't point to kptr", off)
	}
	if f.Kind != maps.Kptr {
		return maps.Field{}, v.errorf(pc, "off=%d kptr isn't referenced kptr", off)
	}
	return f, nil
}

// kptrXchgNew checks the pointer bpf_kptr_xchg moves into field f (not
// NULL): a referenced pointer to f's type itself, at offset 0
// (map_kptr_match_type, strict for referenced kptrs).
func (v *verifier) kptrXchgNew(pc int, regno isa.Register, reg *Reg, f maps.Field) error {
	if reg.Type != PtrToBTFID || reg.Flags&(Untrusted|Rdonly) != 0 {
		return v.errorf(pc, "R%d type=%s expected=ptr_", regno, regTypeString(reg))
	}
	want, err := v.kptrType(f)
	if err != nil {
		return v.errorf(pc, "%v", err)
	}
	if reg.Off < 0 {
		return v.errorf(pc, "negative offset %s ptr R%d off=%d disallowed", regTypeString(reg), regno, reg.Off)
	}
	if !reg.Scalar.Var.IsConst() || reg.Scalar.Var.Value != 0 {
		return v.errorf(pc, "variable %s access var_off=%s disallowed", regTypeString(reg), reg.Scalar.Var)
	}
	if reg.Off != 0 || v.btfType(reg) != want {
		return v.errorf(pc, "invalid kptr access, R%d type=%s%s expected=ptr_%s", regno, regTypeString(reg), v.btfName(reg), f.Pointee)
	}
	if reg.RefID == 0 {
		return v.errorf(pc, "R%d must be referenced when passed to release function", regno)
	}
	return nil
}
