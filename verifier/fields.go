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
// bpfvm has no PTR_TO_BTF_ID yet: where the kernel accepts a kptr load
// (and gives the register the pointee's BTF type), bpfvm refuses it.

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
// and check_map_kptr_access).
func (v *verifier) checkFieldAccess(ptr *Reg, a access) error {
	fields := v.mapFields(ptr.Map)
	if len(fields) == 0 {
		return nil
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
			return v.errorf(a.pc, "%s cannot be accessed directly by load/store", f.Kind)
		}
		switch {
		case a.helper:
			return v.errorf(a.pc, "%s cannot be accessed indirectly by helper", f.Kind)
		case !s.Var.IsConst():
			return v.errorf(a.pc, "%s access cannot have variable offset", f.Kind)
		case p != off+int64(s.Var.Value):
			return v.errorf(a.pc, "%s access misaligned expected=%d off=%d", f.Kind, p, off+int64(s.Var.Value))
		case a.size != 8:
			return v.errorf(a.pc, "%s access size must be BPF_DW", f.Kind)
		}
	}
	if !s.Var.IsConst() {
		return nil
	}
	f, ok := maps.FieldAt(fields, uint32(off+int64(s.Var.Value)))
	if !ok || f.Kind&maps.AnyKptr == 0 {
		return nil
	}
	return v.checkKptrAccess(a, f)
}

// checkKptrAccess checks an access of a whole kernel pointer field (the
// kernel's check_map_kptr_access): plain loads and stores only, no store
// into a referenced kptr, and into the others only NULL (or a pointer of
// the pointee's type, which bpfvm has none of).
func (v *verifier) checkKptrAccess(a access, f maps.Field) error {
	ins := v.insns[a.pc]
	if ins.Op&0xe0 != isa.ModeMEM {
		return v.errorf(a.pc, "kptr in map can only be accessed using BPF_MEM instruction mode")
	}
	class := ins.Class()
	if class != isa.ClassLDX {
		switch f.Kind {
		case maps.Kptr, maps.PercpuKptr:
			return v.errorf(a.pc, "store to referenced kptr disallowed")
		case maps.Uptr:
			return v.errorf(a.pc, "store to uptr disallowed")
		}
	}
	switch class {
	case isa.ClassLDX:
		// The kernel gives the register the pointee's BTF type
		// (PTR_TO_BTF_ID), which bpfvm does not have yet.
		return v.errorf(a.pc, "R%d load of %s field at off=%d (struct %s): bpfvm does not support loading kptrs yet", ins.Dst, f.Kind, f.Offset, f.Pointee)
	case isa.ClassSTX:
		val := a.val
		if val.Type == ScalarValue && val.IsConst() && val.Const() == 0 {
			return nil
		}
		// Only a PTR_TO_BTF_ID of the pointee's type could be stored.
		if f.Kind == maps.KptrUntrusted {
			return v.errorf(a.pc, "invalid kptr access, R%d type=%s expected=ptr_%s or untrusted_ptr_%s", a.valReg, regTypeString(val), f.Pointee, f.Pointee)
		}
		return v.errorf(a.pc, "invalid kptr access, R%d type=%s expected=ptr_%s", a.valReg, regTypeString(val), f.Pointee)
	case isa.ClassST:
		if ins.Imm != 0 {
			return v.errorf(a.pc, "BPF_ST imm must be 0 when storing to kptr at off=%d", f.Offset)
		}
		return nil
	}
	return v.errorf(a.pc, "kptr in map can only be accessed using BPF_LDX/BPF_STX/BPF_ST")
}
