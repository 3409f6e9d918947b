package maps

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/errs"
	"github.com/bpfvm/bpfvm/vm"
)

// FieldKind is the kind of a special field of a map value: an object the
// runtime owns (a lock, a timer, a kernel pointer…) that programs may not
// load or store as plain memory. The values are the kernel's enum
// btf_field_type bits.
type FieldKind uint32

// Field kinds, as the kernel's BPF_SPIN_LOCK… (include/linux/bpf.h).
const (
	SpinLock      FieldKind = 1 << 0  // struct bpf_spin_lock
	Timer         FieldKind = 1 << 1  // struct bpf_timer
	KptrUntrusted FieldKind = 1 << 2  // a pointer tagged __kptr_untrusted
	Kptr          FieldKind = 1 << 3  // a pointer tagged __kptr (a reference)
	PercpuKptr    FieldKind = 1 << 4  // a pointer tagged __percpu_kptr
	ListHead      FieldKind = 1 << 5  // struct bpf_list_head
	ListNode      FieldKind = 1 << 6  // struct bpf_list_node (allocated objects only)
	RBRoot        FieldKind = 1 << 7  // struct bpf_rb_root
	RBNode        FieldKind = 1 << 8  // struct bpf_rb_node (allocated objects only)
	Refcount      FieldKind = 1 << 9  // struct bpf_refcount
	Workqueue     FieldKind = 1 << 10 // struct bpf_wq
	Uptr          FieldKind = 1 << 11 // a pointer tagged __uptr (task storage only)
	ResSpinLock   FieldKind = 1 << 12 // struct bpf_res_spin_lock
	TaskWork      FieldKind = 1 << 13 // struct bpf_task_work

	// AnyKptr are the kinds of kernel pointers programs may load.
	AnyKptr = KptrUntrusted | Kptr | PercpuKptr | Uptr
)

// mapFieldKinds are the kinds the kernel looks for in a map value
// (map_check_btf): list and rbtree nodes are plain memory there.
const mapFieldKinds = SpinLock | ResSpinLock | Timer | AnyKptr | ListHead | RBRoot | Refcount | Workqueue | TaskWork

// fieldsMax is BTF_FIELDS_MAX: a value holds at most this many.
const fieldsMax = 11

// fieldStructs are the structs whose name makes a field of their kind, in
// the kernel's order of matching, with their size and alignment (the uapi
// structs') and whether a struct may hold only one.
var fieldStructs = []struct {
	kind        FieldKind
	name        string
	size, align uint32
	unique      bool
}{
	{SpinLock, "bpf_spin_lock", 4, 4, true},
	{ResSpinLock, "bpf_res_spin_lock", 8, 4, true},
	{Timer, "bpf_timer", 16, 8, true},
	{Workqueue, "bpf_wq", 16, 8, true},
	{TaskWork, "bpf_task_work", 8, 8, true},
	{ListHead, "bpf_list_head", 16, 8, false},
	{ListNode, "bpf_list_node", 24, 8, false},
	{RBRoot, "bpf_rb_root", 16, 8, false},
	{RBNode, "bpf_rb_node", 32, 8, false},
	{Refcount, "bpf_refcount", 4, 4, false},
}

// String is the kernel's name of the kind (btf_field_type_name), which
// its verifier messages use.
func (k FieldKind) String() string {
	switch k {
	case Kptr, KptrUntrusted:
		return "kptr"
	case PercpuKptr:
		return "percpu_kptr"
	case Uptr:
		return "uptr"
	}
	for _, s := range fieldStructs {
		if s.kind == k {
			return s.name
		}
	}
	return fmt.Sprintf("field kind %#x", uint32(k))
}

// Field is a special field of a map value.
type Field struct {
	Kind FieldKind
	// Offset and Size are the field's bytes in the value.
	Offset, Size uint32
	// Pointee is the name of the struct a kernel pointer points to.
	Pointee string
	// Contains is the struct a list or rbtree root holds (its
	// "contains:type:node" declaration tag), NodeOff the offset of its
	// node member, NodeName that member's name.
	Contains *btf.Struct
	NodeOff  uint32
	NodeName string
}

// Errors of field discovery, with the kernel's errnos.
var (
	errTooManyFields = errs.New("too many special fields", syscall.E2BIG)
	errFieldOverlap  = errs.New("overlapping special fields", syscall.EEXIST)
	// ErrAccess is EACCES: a value with special fields in a map
	// with BPF_F_RDONLY_PROG or BPF_F_WRONLY_PROG.
	ErrAccess error = errs.New("permission denied", syscall.EACCES)
	// ErrKernelNotSupported is the kernel-internal ENOTSUPP (524),
	// which the kernel gives to freezing or mapping a map whose values
	// have special fields.
	ErrKernelNotSupported error = errs.New("operation not supported", syscall.Errno(524))
)

// maxResolveDepth is the kernel's MAX_RESOLVE_DEPTH: how deep it follows
// arrays and nested structs.
const maxResolveDepth = 32

// metaFieldKinds are the kinds the kernel looks for when it loads BTF, in
// the structs that may be allocated objects (btf_parse_struct_metas).
const metaFieldKinds = SpinLock | ResSpinLock | ListHead | ListNode | RBRoot | RBNode | Refcount | Kptr | KptrUntrusted | PercpuKptr

// metaStructs are the special structs that make a struct holding one a
// possible allocated object (alloc_obj_fields).
var metaStructs = []string{"bpf_spin_lock", "bpf_list_head", "bpf_list_node", "bpf_rb_root", "bpf_rb_node", "bpf_refcount"}

// ParseFields finds the special fields of a map value of BTF type value
// and size valueSize, in two steps as the kernel does when cilium/ebpf
// creates the map with the BTF of its key and value:
//
//   - Loading the BTF (btf_parse_struct_metas): every struct reachable
//     from value with a member of a special struct type (bpf_spin_lock,
//     bpf_list_head, bpf_refcount…) or a kernel pointer has its fields
//     found for allocated objects; an error, or no field at all, fails
//     the load and so the map's creation: E2BIG for a second spin lock in
//     one struct or too many fields, EFAULT for a lock the rules ignore
//     (misaligned, of another size), EINVAL for a list head without its
//     contains: declaration tag (which cilium/ebpf's map BTF does not
//     carry), EEXIST for overlapping fields.
//   - Checking the map (map_check_btf, btf_parse_fields): the fields of
//     the value itself, members of the value struct (or variables of a
//     data section) named as the kernel's special structs, pointers tagged
//     kptr, kptr_untrusted, percpu_kptr or uptr, in nested structs and
//     arrays of them. An error here leaves the map without fields, as the
//     kernel keeps it: two timers, an array of spin locks or an unknown
//     pointer tag make plain memory.
//
// The result is sorted by offset; nil without fields. A value BTF of a size
// other than valueSize is EINVAL.
func ParseFields(value btf.Type, valueSize uint32) ([]Field, error) {
	if value == nil {
		return nil, nil
	}
	if err := CheckValueBTF(value); err != nil {
		return nil, err
	}
	sz, err := btf.Sizeof(value)
	if err != nil || uint32(sz) != valueSize {
		return nil, fmt.Errorf("value BTF of %d bytes for a value of %d: %w", sz, valueSize, ErrInvalid)
	}
	p := fieldParser{mask: mapFieldKinds, structs: reachableStructs(value)}
	var found []Field
	switch t := value.(type) {
	case *btf.Datasec:
		found, err = p.datasecFields(t)
	default:
		// The kernel resolves the value's id through modifiers and
		// typedefs (btf_type_id_size) and then wants a struct or a
		// data section.
		st, ok := btf.UnderlyingType(value).(*btf.Struct)
		if !ok {
			return nil, nil
		}
		found, err = p.structFields(st, 0)
	}
	if err == nil {
		found, err = checkFieldRecord(found, valueSize)
	}
	if err != nil {
		// map_check_btf keeps the error as the map's record, which
		// every later check takes for no fields.
		return nil, nil
	}
	return found, nil
}

// CheckValueBTF checks the structs reachable from a value's BTF type t as
// the kernel does when it loads BTF (btf_parse_struct_metas): those that
// may be allocated objects must have valid fields, at least one. An error
// fails loading the map's BTF, which cilium/ebpf does not retry without
// it (unlike a creation the kernel refuses).
func CheckValueBTF(t btf.Type) error {
	var err error
	p := fieldParser{mask: metaFieldKinds, structs: reachableStructs(t)}
	walkTypes(t, map[btf.Type]bool{}, func(t btf.Type) bool {
		st, ok := t.(*btf.Struct)
		if !ok || !mayBeObject(st) {
			return true
		}
		var fs []Field
		fs, err = p.structFields(st, 0)
		if err == nil {
			fs, err = checkFieldRecord(fs, st.Size)
		}
		if err == nil && len(fs) == 0 {
			err = fmt.Errorf("no special field found: %w", syscall.EFAULT)
		}
		if err != nil {
			err = fmt.Errorf("loading BTF: struct %s: %w", st.Name, err)
		}
		return err == nil
	})
	return err
}

// mayBeObject reports whether a struct has a member whose type is a
// special struct an allocated object holds, or a kernel pointer.
func mayBeObject(st *btf.Struct) bool {
	for _, m := range st.Members {
		if s, ok := m.Type.(*btf.Struct); ok && slices.Contains(metaStructs, s.Name) {
			return true
		}
		if _, ok, err := (fieldParser{mask: Kptr | KptrUntrusted | PercpuKptr}).kptr(m.Type, 0); ok && err == nil {
			return true
		}
	}
	return false
}

// memberTypes are the types of members.
func memberTypes(ms []btf.Member) []btf.Type {
	out := make([]btf.Type, len(ms))
	for i, m := range ms {
		out[i] = m.Type
	}
	return out
}

// WalkStructs calls visit on every struct reachable from t, once each,
// until visit returns false.
func WalkStructs(t btf.Type, visit func(*btf.Struct) bool) {
	walkTypes(t, map[btf.Type]bool{}, func(t btf.Type) bool {
		if st, ok := t.(*btf.Struct); ok {
			return visit(st)
		}
		return true
	})
}

// walkTypes calls visit on t and every type reachable from it, once each,
// until visit returns false.
func walkTypes(t btf.Type, seen map[btf.Type]bool, visit func(btf.Type) bool) bool {
	if t == nil || seen[t] {
		return true
	}
	seen[t] = true
	if !visit(t) {
		return false
	}
	if u := skipModifiers(t); u != t {
		// Typedefs, qualifiers and tags lead to one type.
		return walkTypes(u, seen, visit)
	}
	var next []btf.Type
	switch u := t.(type) {
	case *btf.Struct:
		next = memberTypes(u.Members)
	case *btf.Union:
		next = memberTypes(u.Members)
	case *btf.Pointer:
		next = []btf.Type{u.Target}
	case *btf.Array:
		next = []btf.Type{u.Type}
	case *btf.Datasec:
		for _, v := range u.Vars {
			if v, ok := v.Type.(*btf.Var); ok {
				next = append(next, v.Type)
			}
		}
	case *btf.FuncProto:
		next = []btf.Type{u.Return}
		for _, p := range u.Params {
			next = append(next, p.Type)
		}
	}
	for _, n := range next {
		if !walkTypes(n, seen, visit) {
			return false
		}
	}
	return true
}

// checkFieldRecord checks the fields found as btf_parse_fields does:
// within the value, in order without overlap, list and rbtree roots with
// a lock. It returns them sorted.
func checkFieldRecord(found []Field, valueSize uint32) ([]Field, error) {
	if len(found) == 0 {
		return nil, nil
	}
	var next uint32
	for _, f := range found {
		if uint64(f.Offset)+uint64(f.Size) > uint64(valueSize) {
			return nil, fmt.Errorf("%s at %d past the value's %d bytes: %w", f.Kind, f.Offset, valueSize, syscall.EFAULT)
		}
		if f.Offset < next {
			return nil, fmt.Errorf("%s at %d overlaps the field before: %w", f.Kind, f.Offset, errFieldOverlap)
		}
		next = f.Offset + f.Size
	}
	var kinds FieldKind
	for _, f := range found {
		kinds |= f.Kind
	}
	if kinds&(ListHead|RBRoot) != 0 && kinds&SpinLock == 0 {
		return nil, fmt.Errorf("a graph root without a bpf_spin_lock: %w", ErrInvalid)
	}
	if kinds&ListNode != 0 && kinds&RBNode != 0 && kinds&Refcount == 0 {
		// Only a refcounted object may be in a list and a tree.
		return nil, fmt.Errorf("list and rbtree nodes without a bpf_refcount: %w", ErrInvalid)
	}
	slices.SortStableFunc(found, func(a, b Field) int { return int(int64(a.Offset) - int64(b.Offset)) })
	return found, nil
}

// fieldParser walks BTF for the fields of the kinds in mask.
type fieldParser struct {
	mask FieldKind
	// structs finds a struct of the BTF by name, for the contains:
	// declaration tags of graph roots.
	structs func(name string) *btf.Struct
}

// reachableStructs finds structs by name among the types reachable from t:
// the BTF cilium/ebpf gives the kernel with a map is its key's and value's
// types and what they refer to.
func reachableStructs(t btf.Type) func(string) *btf.Struct {
	var byName map[string]*btf.Struct
	return func(name string) *btf.Struct {
		if byName == nil {
			byName = map[string]*btf.Struct{}
			walkTypes(t, map[btf.Type]bool{}, func(t btf.Type) bool {
				if st, ok := t.(*btf.Struct); ok && st.Name != "" && byName[st.Name] == nil {
					byName[st.Name] = st
				}
				return true
			})
		}
		return byName[name]
	}
}

// ObjectFields finds the special fields of an allocated object of struct
// type t (bpf_obj_new's type), as the kernel's btf_parse_struct_metas
// records them for the program's BTF: structs resolves the contains:
// declaration tags of its graph roots.
func ObjectFields(t *btf.Struct, structs func(name string) *btf.Struct) ([]Field, error) {
	p := fieldParser{mask: metaFieldKinds, structs: structs}
	fs, err := p.structFields(t, 0)
	if err == nil {
		fs, err = checkFieldRecord(fs, t.Size)
	}
	return fs, err
}

// structFields finds the fields among the members of t (btf_find_struct_field);
// each struct has its own set of unique kinds seen.
func (p fieldParser) structFields(t *btf.Struct, level int) ([]Field, error) {
	var out []Field
	var seen FieldKind
	for _, m := range t.Members {
		if m.Offset%8 != 0 {
			// Valid C code cannot generate such BTF.
			return nil, fmt.Errorf("member %s at bit %d: %w", m.Name, m.Offset, ErrInvalid)
		}
		fs, err := p.one(m.Type, m.Tags, uint32(m.Offset/8), 0, &seen, fieldsMax-len(out), level)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// datasecFields finds the fields among the variables of a data section
// (btf_find_datasec_var): each variable must be as large as its type.
func (p fieldParser) datasecFields(t *btf.Datasec) ([]Field, error) {
	var out []Field
	var seen FieldKind
	for _, vsi := range t.Vars {
		v, ok := vsi.Type.(*btf.Var)
		if !ok {
			continue
		}
		fs, err := p.one(v.Type, v.Tags, vsi.Offset, vsi.Size, &seen, fieldsMax-len(out), 0)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// one finds the fields of a member or variable of type t at off
// (btf_find_field_one): a special struct, a tagged pointer, or the fields
// of a nested struct, each repeated for every element of an array. room
// is how many fields may still be found.
func (p fieldParser) one(t btf.Type, tags []string, off, expected uint32, seen *FieldKind, room, level int) ([]Field, error) {
	nelems := uint32(1)
	i := 0
	for ; i < maxResolveDepth; i++ {
		a, ok := t.(*btf.Array)
		if !ok {
			break
		}
		nelems *= a.Nelems
		t = a.Type
	}
	if i == maxResolveDepth {
		return nil, fmt.Errorf("arrays nested too deep: %w", errTooManyFields)
	}
	if nelems == 0 {
		return nil, nil
	}
	kind, size, align, err := p.kindOf(t, seen)
	if err != nil {
		return nil, err
	}
	st, isStruct := t.(*btf.Struct)
	if kind == 0 && isStruct {
		if expected != 0 && expected != st.Size*nelems {
			return nil, nil
		}
		return p.nested(st, off, nelems, room, level)
	}
	if kind == 0 || expected != 0 && expected != size*nelems || off%align != 0 {
		return nil, nil
	}
	f := Field{Kind: kind, Offset: off, Size: size}
	if kind&AnyKptr != 0 {
		var ok bool
		if f, ok, err = p.kptr(t, off); err != nil || !ok {
			return nil, err
		}
	} else if !isStruct || st.Size != size {
		// A struct of the name but not of the size is plain memory.
		return nil, nil
	}
	if kind&(ListHead|RBRoot) != 0 {
		if f, err = p.graphRoot(f, tags); err != nil {
			return nil, err
		}
	}
	if room <= 0 {
		return nil, fmt.Errorf("more than %d special fields: %w", fieldsMax, errTooManyFields)
	}
	return repeatFields([]Field{f}, nelems, size, room)
}

// graphRoot reads the "contains:type:node" declaration tag of a list or
// rbtree root (btf_parse_graph_root): the struct, found by name in the
// BTF, and its node member of the root's node kind, aligned. Each is
// EINVAL when missing.
func (p fieldParser) graphRoot(f Field, tags []string) (Field, error) {
	var spec string
	for _, t := range tags {
		if rest, ok := strings.CutPrefix(t, "contains:"); ok {
			if spec != "" {
				return f, fmt.Errorf("%s at %d with two contains: tags: %w", f.Kind, f.Offset, ErrInvalid)
			}
			spec = rest
		}
	}
	name, node, ok := strings.Cut(spec, ":")
	if spec == "" || !ok || name == "" || node == "" {
		return f, fmt.Errorf("%s at %d without a contains:type:node declaration tag: %w", f.Kind, f.Offset, ErrInvalid)
	}
	var st *btf.Struct
	if p.structs != nil {
		st = p.structs(name)
	}
	if st == nil {
		return f, fmt.Errorf("%s at %d contains struct %s, not in the BTF: %w", f.Kind, f.Offset, name, ErrInvalid)
	}
	want := "bpf_list_node"
	if f.Kind == RBRoot {
		want = "bpf_rb_node"
	}
	for _, m := range st.Members {
		if m.Name != node {
			continue
		}
		if mt, ok := m.Type.(*btf.Struct); !ok || mt.Name != want || m.Offset%64 != 0 {
			return f, fmt.Errorf("%s at %d: member %s of struct %s is not an aligned %s: %w", f.Kind, f.Offset, node, name, want, ErrInvalid)
		}
		f.Contains, f.NodeOff, f.NodeName = st, m.Offset.Bytes(), node
		return f, nil
	}
	return f, fmt.Errorf("%s at %d: struct %s has no member %s: %w", f.Kind, f.Offset, name, node, ErrInvalid)
}

// nested finds the fields of a nested struct (btf_find_nested_struct),
// repeated for each element of an array of it.
func (p fieldParser) nested(t *btf.Struct, off, nelems uint32, room, level int) ([]Field, error) {
	level++
	if level >= maxResolveDepth {
		return nil, fmt.Errorf("structs nested too deep: %w", errTooManyFields)
	}
	fs, err := p.structFields(t, level)
	if err != nil || len(fs) == 0 {
		return nil, err
	}
	for i := range fs {
		fs[i].Offset += off
	}
	return repeatFields(fs, nelems, t.Size, room)
}

// repeatFields repeats fields for the other elements of an array of nelems
// of elemSize bytes (btf_repeat_fields): only kernel pointers and graph
// roots may be repeated.
func repeatFields(fs []Field, nelems, elemSize uint32, room int) ([]Field, error) {
	if nelems == 1 {
		return fs, nil
	}
	for _, f := range fs {
		if f.Kind&(AnyKptr|ListHead|RBRoot) == 0 {
			return nil, fmt.Errorf("array of %s: %w", f.Kind, ErrInvalid)
		}
	}
	if uint64(len(fs))*uint64(nelems) > uint64(room) {
		return nil, fmt.Errorf("more than %d special fields: %w", fieldsMax, errTooManyFields)
	}
	out := slices.Clone(fs)
	for i := uint32(1); i < nelems; i++ {
		for _, f := range fs {
			f.Offset += i * elemSize
			out = append(out, f)
		}
	}
	return out, nil
}

// kindOf is the kind of a member's type by its name, as the kernel's
// btf_get_field_type: a special struct's name, else a kernel pointer
// candidate for what is not a struct. A second unique field in one struct
// is E2BIG.
func (p fieldParser) kindOf(t btf.Type, seen *FieldKind) (FieldKind, uint32, uint32, error) {
	name := t.TypeName()
	for _, s := range fieldStructs {
		if p.mask&s.kind == 0 || name != s.name {
			continue
		}
		if s.unique {
			if *seen&s.kind != 0 {
				return 0, 0, 0, fmt.Errorf("a second %s: %w", s.name, errTooManyFields)
			}
			*seen |= s.kind
		}
		return s.kind, s.size, s.align, nil
	}
	if _, ok := t.(*btf.Struct); !ok && p.mask&AnyKptr != 0 {
		return Kptr, 8, 8, nil
	}
	return 0, 0, 0, nil
}

// kptr reads a kernel pointer field (btf_find_kptr): a pointer (perhaps
// volatile) to exactly one type tag naming the kind, on a struct. Other
// members are plain memory (false).
func (p fieldParser) kptr(t btf.Type, off uint32) (Field, bool, error) {
	if v, ok := t.(*btf.Volatile); ok {
		t = v.Type
	}
	ptr, ok := t.(*btf.Pointer)
	if !ok {
		return Field{}, false, nil
	}
	tag, ok := ptr.Target.(*btf.TypeTag)
	if !ok {
		return Field{}, false, nil
	}
	if _, ok := tag.Type.(*btf.TypeTag); ok {
		return Field{}, false, fmt.Errorf("kptr at %d with two type tags: %w", off, ErrInvalid)
	}
	var kind FieldKind
	switch tag.Value {
	case "kptr_untrusted":
		kind = KptrUntrusted
	case "kptr":
		kind = Kptr
	case "percpu_kptr":
		kind = PercpuKptr
	case "uptr":
		kind = Uptr
	default:
		return Field{}, false, fmt.Errorf("pointer at %d with type tag %q: %w", off, tag.Value, ErrInvalid)
	}
	if p.mask&kind == 0 {
		return Field{}, false, nil
	}
	target := skipModifiers(tag.Type)
	st, ok := target.(*btf.Struct)
	if !ok {
		return Field{}, false, fmt.Errorf("%s at %d to %v, not a struct: %w", kind, off, target, ErrInvalid)
	}
	return Field{Kind: kind, Offset: off, Size: 8, Pointee: st.Name}, true, nil
}

// skipModifiers skips typedefs, qualifiers and type tags
// (btf_type_skip_modifiers).
func skipModifiers(t btf.Type) btf.Type {
	for range maxResolveDepth {
		switch u := t.(type) {
		case *btf.Typedef:
			t = u.Type
		case *btf.Volatile:
			t = u.Type
		case *btf.Const:
			t = u.Type
		case *btf.Restrict:
			t = u.Type
		case *btf.TypeTag:
			t = u.Type
		default:
			return t
		}
	}
	return t
}

// checkFieldTypes checks which map types may hold values with fields of
// which kinds, as the kernel's map_check_btf does (EOPNOTSUPP), and that
// such maps do not restrict programs' access (EACCES).
func checkFieldTypes(s Spec, fields []Field) error {
	if len(fields) == 0 {
		return nil
	}
	if s.Flags&(FlagRdonlyProg|FlagWronlyProg) != 0 {
		return fmt.Errorf("%s flags %#x: special fields with program access flags: %w", s.Type, s.Flags, ErrAccess)
	}
	var mask FieldKind
	for _, f := range fields {
		mask |= f.Kind
	}
	for k := FieldKind(1); k != 0 && k <= TaskWork; k <<= 1 {
		if mask&k == 0 {
			continue
		}
		var ok bool
		switch k {
		case SpinLock, ResSpinLock:
			// Also the local storages bpfvm does not implement.
			ok = s.Type == Hash || s.Type == Array
		case Timer, Workqueue, TaskWork, ListHead, RBRoot:
			ok = s.Type == Hash || s.Type == LRUHash || s.Type == Array
		case KptrUntrusted, Kptr, PercpuKptr, Refcount:
			switch s.Type {
			case Hash, PerCPUHash, LRUHash, LRUPerCPUHash, Array, PerCPUArray:
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("%s maps cannot hold a %s: %w", s.Type, k, ErrNotSupported)
		}
	}
	return nil
}

// FieldAt returns the field among fields (sorted) that starts at off.
func FieldAt(fields []Field, off uint32) (Field, bool) {
	i, ok := slices.BinarySearchFunc(fields, off, func(f Field, off uint32) int { return int(int64(f.Offset) - int64(off)) })
	if !ok {
		return Field{}, false
	}
	return fields[i], true
}

// copyValue copies a value from src to dst but for its special fields,
// which keep dst's bytes: the kernel's copy_map_value never copies them
// from user space or between values.
func copyValue(dst, src []byte, fields []Field) {
	var from uint32
	for _, f := range fields {
		if f.Offset >= uint32(len(dst)) {
			break
		}
		copy(dst[from:f.Offset], src[from:f.Offset])
		from = f.Offset + f.Size
	}
	if from < uint32(len(dst)) {
		copy(dst[from:], src[from:])
	}
}

// initFields sets the special fields of a value as the kernel's
// bpf_obj_init does: zero, but a refcount of one. It is what a value
// copied out to user space shows (check_and_init_map_value) and what a new
// element's fields are.
func initFields(b []byte, fields []Field) {
	for _, f := range fields {
		if f.Offset+f.Size > uint32(len(b)) {
			continue
		}
		clear(b[f.Offset : f.Offset+f.Size])
		if f.Kind == Refcount {
			binary.NativeEndian.PutUint32(b[f.Offset:], 1)
		}
	}
}

// storeValue writes src, one value, to the value at dst but for its
// special fields, which keep their bytes (copy_map_value).
func storeValue(dst uint64, src []byte, fields []Field) {
	d := bytesAt(dst, uint64(len(src)))
	if len(fields) == 0 {
		copy(d, src)
		return
	}
	copyValue(d, src, fields)
}

// loadValues copies values at src, stride bytes apart, to dst with their
// special fields set as initFields does, as the kernel copies values out to
// user space (copy_map_value, then check_and_init_map_value).
func loadValues(dst []byte, src, stride uint64, fields []Field) {
	copy(dst, bytesAt(src, uint64(len(dst))))
	if len(fields) == 0 {
		return
	}
	for off := uint64(0); off < uint64(len(dst)); off += stride {
		initFields(dst[off:], fields)
	}
}

// specFields returns the fields of a spec that validate accepted.
func specFields(s Spec) []Field {
	fields, _ := s.Fields()
	return fields
}

// LockSpin takes the bpf_spin_lock at p, spinning until it is free: the
// kernel's __bpf_spin_lock. Verified programs hold it only for a few
// instructions without calls.
func LockSpin(p *uint32) {
	for !atomic.CompareAndSwapUint32(p, 0, 1) {
		runtime.Gosched()
	}
}

// UnlockSpin releases the bpf_spin_lock at p.
func UnlockSpin(p *uint32) { atomic.StoreUint32(p, 0) }

// storeLocked writes src to the value at dst as storeValue does, holding
// the value's spin lock (the kernel's copy_map_value_locked, for
// BPF_F_LOCK).
func storeLocked(dst uint64, src []byte, fields []Field) {
	i := slices.IndexFunc(fields, func(f Field) bool { return f.Kind == SpinLock })
	if i < 0 {
		storeValue(dst, src, fields)
		return
	}
	lock := (*uint32)(vm.Ptr(dst + uint64(fields[i].Offset)))
	LockSpin(lock)
	storeValue(dst, src, fields)
	UnlockSpin(lock)
}

// hasSpinLock reports whether the fields hold a bpf_spin_lock, which
// BPF_F_LOCK needs.
func hasSpinLock(fields []Field) bool {
	return slices.ContainsFunc(fields, func(f Field) bool { return f.Kind == SpinLock })
}
