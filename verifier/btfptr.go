package verifier

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// Pointers to kernel objects typed by BTF (PtrToBTFID): where they come
// from (kfuncs, tracing arguments), what loads through them give (the
// kernel's check_ptr_to_btf_access, btf_struct_access and btf_struct_walk)
// and how trust passes from a pointer to the pointers read through it.
//
// The types come from Options.KernelTypes. A register holds the index of
// its type in the verification's type table (Reg.BTF), so that registers
// stay small and compare by a number when states are pruned.

// btfEntry is a struct or union type PtrToBTFID registers point to.
type btfEntry struct {
	typ  btf.Type // *btf.Struct or *btf.Union
	name string
}

// btfRef returns the index of t in the verification's type table, adding
// it the first time.
func (v *verifier) btfRef(t btf.Type) uint32 {
	if i, ok := v.btfIndex[t]; ok {
		return i
	}
	if v.btfIndex == nil {
		v.btfIndex = map[btf.Type]uint32{}
	}
	v.btfTypes = append(v.btfTypes, btfEntry{typ: t, name: typeName(t)})
	i := uint32(len(v.btfTypes))
	v.btfIndex[t] = i
	return i
}

// btfType returns the type a PtrToBTFID register points to.
func (v *verifier) btfType(r *Reg) btf.Type { return v.btfTypes[r.BTF-1].typ }

// btfName names the type a PtrToBTFID register points to.
func (v *verifier) btfName(r *Reg) string {
	if r.BTF == 0 || int(r.BTF) > len(v.btfTypes) {
		return ""
	}
	return v.btfTypes[r.BTF-1].name
}

// btfPtr is a non-null PtrToBTFID to t with flags.
func (v *verifier) btfPtr(t btf.Type, flags uint8) Reg {
	r := Reg{Type: PtrToBTFID, BTF: v.btfRef(t), Flags: flags, Scalar: Const(0)}
	if flags&MaybeNull != 0 {
		r.ID = v.newID()
	}
	return r
}

// typeName names a type as the kernel's messages do: "(anon)" for an
// anonymous one.
func typeName(t btf.Type) string {
	if n := t.TypeName(); n != "" {
		return n
	}
	return "(anon)"
}

// isStructType reports whether t is a struct or union (the kernel's
// btf_type_is_struct).
func isStructType(t btf.Type) bool {
	switch t.(type) {
	case *btf.Struct, *btf.Union:
		return true
	}
	return false
}

// structMembers returns the members and size of a struct or union.
func structMembers(t btf.Type) ([]btf.Member, uint32) {
	switch t := t.(type) {
	case *btf.Struct:
		return t.Members, t.Size
	case *btf.Union:
		return t.Members, t.Size
	}
	return nil, 0
}

// walkResult is what one step of the walk found at the accessed bytes.
type walkResult int

const (
	walkScalar       walkResult = iota // an int, enum, bitfield...: a scalar
	walkPtr                            // a pointer to a struct: a PtrToBTFID
	walkPtrUntrusted                   // a pointer to anything else: untrusted memory
	walkStruct                         // an embedded struct starting there: walk into it
)

// walkStep is the outcome of one step of the walk.
type walkStep struct {
	res   walkResult
	next  btf.Type // the struct pointed to or walked into
	field string   // the pointer member's name (walkPtr)
	// rcu says the pointer member is tagged __rcu.
	rcu bool
}

// btfWalk finds what the size bytes at off of struct or union t hold, as
// the kernel's btf_struct_walk: it descends into members that contain the
// access and stops at the first scalar, pointer or embedded struct that
// starts exactly there. untrusted collects the kernel's PTR_UNTRUSTED of a
// walk through unions of several members.
func btfWalk(t btf.Type, off, size uint32, untrusted *bool) (walkStep, error) {
again:
	t = btf.UnderlyingType(t)
	tname := typeName(t)
	if !isStructType(t) {
		return walkStep{}, fmt.Errorf("Type '%s' is not a struct", tname)
	}
	ms, tsize := structMembers(t)
	if u, ok := t.(*btf.Union); ok && len(u.Members) != 1 {
		// Which member a union holds is unknown: pointers read through
		// one are untrusted (a single-member union, as __bpf_md_ptr,
		// is its member).
		*untrusted = true
	}
	if off+size > tsize {
		// A flexible array at the end may be read past the size, by
		// elements of ints or structs.
		if len(ms) == 0 {
			return walkStep{}, fmt.Errorf("access beyond struct %s at off %d size %d", tname, off, size)
		}
		last := ms[len(ms)-1]
		arr, ok := btf.UnderlyingType(last.Type).(*btf.Array)
		moff := last.Offset.Bytes()
		if !ok || arr.Nelems != 0 || off < moff {
			return walkStep{}, fmt.Errorf("access beyond struct %s at off %d size %d", tname, off, size)
		}
		elem := btf.UnderlyingType(arr.Type)
		if _, ok := elem.(*btf.Int); ok {
			return walkStep{res: walkScalar}, nil
		}
		esize, err := btf.Sizeof(elem)
		if !isStructType(elem) || err != nil || esize == 0 {
			return walkStep{}, fmt.Errorf("access beyond struct %s at off %d size %d", tname, off, size)
		}
		t, off = elem, (off-moff)%uint32(esize)
		goto again
	}
	for _, m := range ms {
		moff := m.Offset.Bytes()
		if off+size <= moff {
			break // past the access
		}
		if m.BitfieldSize != 0 {
			// Bitfields are scalars when read whole; an access of part
			// of one, or of the members after, goes on.
			end := (uint32(m.Offset) + uint32(m.BitfieldSize) + 7) / 8
			if off <= moff && end <= off+size {
				return walkStep{res: walkScalar}, nil
			}
			continue
		}
		if off < moff {
			break // a hole
		}
		mtype, msize, elem, nelems, err := resolveSize(m.Type)
		if err != nil {
			return walkStep{}, fmt.Errorf("field %s doesn't have size", m.Name)
		}
		trueEnd := moff + msize
		if off >= trueEnd {
			continue
		}
		if _, ok := mtype.(*btf.Array); ok {
			if msize == 0 {
				continue // an empty array
			}
			// Arrays, of any dimension, are their elements in a row;
			// an int array may be read across elements (scratch
			// space such as skb->cb), up to its end.
			esize := msize / nelems
			moff += (off - moff) / esize * esize
			msize = esize
			mtype = elem
		}
		if isStructType(mtype) {
			if off == moff {
				return walkStep{res: walkStruct, next: mtype}, nil
			}
			t, off = mtype, off-moff
			goto again
		}
		if p, ok := mtype.(*btf.Pointer); ok {
			if msize != size || off != moff {
				return walkStep{}, fmt.Errorf("cannot access ptr member %s with moff %d in struct %s with off %d size %d", m.Name, moff, tname, off, size)
			}
			rcu := false
			if tag, ok := p.Target.(*btf.TypeTag); ok && tag.Value == "rcu" {
				rcu = true
			}
			target := btf.UnderlyingType(p.Target)
			if isStructType(target) {
				return walkStep{res: walkPtr, next: target, field: m.Name, rcu: rcu}, nil
			}
			return walkStep{res: walkPtrUntrusted}, nil
		}
		if off+size > trueEnd && !*untrusted {
			return walkStep{}, fmt.Errorf("access beyond the end of member %s (mend:%d) in struct %s with off %d size %d", m.Name, trueEnd, tname, off, size)
		}
		return walkStep{res: walkScalar}, nil
	}
	return walkStep{}, fmt.Errorf("struct %s doesn't have field at offset %d", tname, off)
}

// resolveSize resolves a member's type through typedefs and qualifiers
// and, for arrays of any dimension, to their innermost element (the
// kernel's __btf_resolve_size): the type, its whole size, and for arrays
// the element and how many there are.
func resolveSize(t btf.Type) (resolved btf.Type, size uint32, elem btf.Type, nelems uint32, err error) {
	resolved = btf.UnderlyingType(t)
	n, err := btf.Sizeof(resolved)
	if err != nil {
		return nil, 0, nil, 0, err
	}
	if _, ok := resolved.(*btf.Void); ok {
		return nil, 0, nil, 0, fmt.Errorf("void")
	}
	nelems = 1
	e := resolved
	for {
		a, ok := e.(*btf.Array)
		if !ok {
			break
		}
		nelems *= a.Nelems
		e = btf.UnderlyingType(a.Type)
	}
	return resolved, uint32(n), e, nelems, nil
}

// btfAccess checks a load or store through a PtrToBTFID and gives what a
// load yields (the kernel's check_ptr_to_btf_access): reads only, at a
// constant offset, of what the type has there.
func (v *verifier) btfAccess(ptr *Reg, a access) (Reg, error) {
	tname := v.btfName(ptr)
	off := int64(ptr.Off) + int64(a.off)
	switch {
	case v.opts.Unprivileged:
		return Reg{}, v.errorf(a.pc, "'struct %s' access is allowed only to CAP_PERFMON and CAP_SYS_ADMIN", tname)
	case off < 0:
		return Reg{}, v.errorf(a.pc, "R%d is ptr_%s invalid negative access: off=%d", a.reg, tname, off)
	case !ptr.Scalar.Var.IsConst() || ptr.Scalar.Var.Value != 0:
		return Reg{}, v.errorf(a.pc, "R%d is ptr_%s invalid variable offset: off=%d, var_off=%s", a.reg, tname, off, ptr.Scalar.Var)
	case a.write && ptr.Flags&Alloc == 0:
		// The kernel lets program types write some fields of some
		// structs (a conntrack's mark); bpfvm none.
		return Reg{}, v.errorf(a.pc, "only read is supported")
	}
	if ptr.Flags&Alloc != 0 {
		// An object of the program's own type: its special fields are
		// the kfuncs' (graph.go); the rest is plain memory.
		if err := v.allocAccess(ptr, a, off); err != nil {
			return Reg{}, err
		}
		if a.write {
			if v.leaks(a) {
				return Reg{}, v.errorf(a.pc, "R%d leaks addr into mem", a.valReg)
			}
			if sz, err := btf.Sizeof(v.btfType(ptr)); err != nil || off+int64(a.size) > int64(sz) {
				return Reg{}, v.errorf(a.pc, "access beyond struct %s at off %d size %d", tname, off, a.size)
			}
			return Reg{}, nil
		}
	}
	untrusted := false
	t, o := v.btfType(ptr), uint32(off)
	for {
		step, err := btfWalk(t, o, uint32(a.size), &untrusted)
		if err != nil {
			return Reg{}, v.errorf(a.pc, "%v", err)
		}
		switch step.res {
		case walkStruct:
			t, o = step.next, 0
			continue
		case walkScalar:
			return v.loadedScalar(a.size), nil
		case walkPtrUntrusted:
			return Reg{Type: PtrToMem, Flags: Rdonly | Untrusted, Scalar: Const(0)}, nil
		}
		return v.btfPtr(step.next, v.walkedFlags(ptr, step, untrusted)), nil
	}
}

// walkedFlags is the trust of a pointer read through ptr (the kernel's
// rules in check_ptr_to_btf_access, inside an RCU read section or not,
// inRCU): an untrusted pointer's
// pointers are untrusted; a trusted or RCU one's are trusted or RCU where
// the kernel lists the member as such (btfSafe) or tags it __rcu, and
// otherwise untrusted; a plain pointer's are plain.
func (v *verifier) walkedFlags(ptr *Reg, step walkStep, untrusted bool) uint8 {
	var flags uint8
	if untrusted {
		flags = Untrusted
	}
	switch {
	case ptr.Flags&(Untrusted|Alloc) != 0:
		// What an allocated object points to, the program stored.
		return Untrusted
	case ptr.Flags&(Trusted|RCU) != 0 || ptr.RefID != 0:
		switch btfSafeMember(v.btfName(ptr), step.field, step.next.TypeName()) {
		case safeTrusted:
			return flags | Trusted
		case safeTrustedOrNull:
			return flags | Trusted | MaybeNull
		}
		if !v.inRCU() {
			// Outside an RCU read section every other pointer read
			// through a trusted one is untrusted (not the plain
			// PTR_TO_BTF_ID of compatibility).
			return Untrusted
		}
		switch btfSafeMember(v.btfName(ptr), step.field, step.next.TypeName()) {
		case safeRCU:
			return flags | RCU
		case safeRCUOrNull:
			return RCU | MaybeNull
		}
		if step.rcu {
			return flags | RCU | MaybeNull
		}
		// Any other pointer read through a trusted one is untrusted
		// (6.18's "walking unknown pointers yields untrusted pointer").
		return Untrusted
	}
	return flags
}

// Trust the kernel gives pointers read from a trusted or RCU pointer
// (its BTF_TYPE_SAFE_TRUSTED, _TRUSTED_OR_NULL, _RCU and _RCU_OR_NULL
// lists).
const (
	safeNone = iota
	safeTrusted
	safeTrustedOrNull
	safeRCU
	safeRCUOrNull
)

// btfSafe lists the members whose pointers keep their parent's trust, by
// struct and member name, with the name of the struct they point to.
var btfSafe = map[string]map[string]struct {
	kind   int
	target string
}{
	"task_struct": {
		"cpus_ptr":     {safeRCU, "cpumask"},
		"cgroups":      {safeRCU, "css_set"},
		"real_parent":  {safeRCU, "task_struct"},
		"group_leader": {safeRCU, "task_struct"},
	},
	"cgroup":              {"kn": {safeRCU, "kernfs_node"}},
	"css_set":             {"dfl_cgrp": {safeRCU, "cgroup"}},
	"cgroup_subsys_state": {"cgroup": {safeRCU, "cgroup"}},
	"mm_struct":           {"exe_file": {safeRCUOrNull, "file"}},
	"sk_buff":             {"sk": {safeRCUOrNull, "sock"}},
	"request_sock":        {"sk": {safeRCUOrNull, "sock"}},
	"bpf_iter_meta":       {"seq": {safeTrusted, "seq_file"}},
	"bpf_iter__task":      {"meta": {safeTrusted, "bpf_iter_meta"}, "task": {safeTrusted, "task_struct"}},
	"linux_binprm":        {"file": {safeTrusted, "file"}},
	"file":                {"f_inode": {safeTrusted, "inode"}},
	"dentry":              {"d_inode": {safeTrustedOrNull, "inode"}},
	"socket":              {"sk": {safeTrustedOrNull, "sock"}},
}

// btfSafeMember returns how the kernel trusts member field of struct
// parent, pointing to struct target.
func btfSafeMember(parent, field, target string) int {
	m, ok := btfSafe[parent][field]
	if !ok || m.target != target {
		return safeNone
	}
	return m.kind
}
