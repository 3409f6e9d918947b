package bpfvm

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// withVariables returns the spec of map name with the values of the
// collection's variables in that data section written over its contents,
// as cilium/ebpf does at load: users configure `const volatile` globals by
// setting CollectionSpec.Variables before loading. The caller's spec is
// left unchanged.
func withVariables(spec *ebpf.CollectionSpec, name string) (*ebpf.MapSpec, error) {
	ms := spec.Maps[name]
	var data []byte
	for _, v := range spec.Variables {
		if v.SectionName != name || v.Value == nil {
			continue
		}
		if data == nil {
			if len(ms.Contents) != 1 {
				return nil, fmt.Errorf("map %s: variable %s: data section with %d keys, want one", name, v.Name, len(ms.Contents))
			}
			b, ok := ms.Contents[0].Value.([]byte)
			if key, isU32 := ms.Contents[0].Key.(uint32); !ok || !isU32 || key != 0 {
				return nil, fmt.Errorf("map %s: variable %s: data section contents are not one byte slice at key 0", name, v.Name)
			}
			data = slices.Clone(b)
		}
		end := uint64(v.Offset) + uint64(len(v.Value))
		if end > uint64(len(data)) {
			return nil, fmt.Errorf("map %s: variable %s exceeds the section", name, v.Name)
		}
		copy(data[v.Offset:end], v.Value)
	}
	if data == nil {
		return ms, nil
	}
	cp := *ms
	cp.Contents = []ebpf.MapKV{{Key: uint32(0), Value: data}}
	return &cp, nil
}

// Variable is a global variable of a loaded collection, read and written
// in its data section's memory (Map.Memory), as cilium/ebpf's Variable:
// programs see a Set at once, and Get reads what they wrote. Variables of
// .rodata are read-only after load (the section is frozen, so the
// verifier may take their values as constants): set them in
// CollectionSpec.Variables before loading.
type Variable struct {
	name   string
	offset uint32
	size   uint32
	t      *btf.Var
	mm     *Memory // nil when the section has no Memory
}

// newVariables returns the variables of spec over the memory of their
// sections' maps in maps, as cilium/ebpf makes them at load: a section
// without Memory (not mmapable) gives variables whose Set and Get fail
// with ErrNotSupported.
func newVariables(spec *ebpf.CollectionSpec, ms map[string]*Map) (map[string]*Variable, error) {
	vars := make(map[string]*Variable, len(spec.Variables))
	for _, name := range sortedKeys(spec.Variables) {
		vs := spec.Variables[name]
		m := ms[vs.SectionName]
		if m == nil {
			return nil, fmt.Errorf("variable %s: missing map %s", name, vs.SectionName)
		}
		mm, err := m.Memory()
		if err != nil && !errors.Is(err, ErrNotSupported) {
			return nil, fmt.Errorf("variable %s: getting memory for map %s: %w", name, vs.SectionName, err)
		}
		v := &Variable{name: vs.Name, offset: vs.Offset, size: vs.Size(), t: vs.Type, mm: mm}
		if mm != nil && !mm.bounds(v.offset, v.size) {
			return nil, fmt.Errorf("variable %s: offset %d(+%d) is out of bounds", name, v.offset, v.size)
		}
		vars[name] = v
	}
	return vars, nil
}

// Size returns the size of the variable in bytes.
func (v *Variable) Size() uint32 { return v.size }

// ReadOnly reports whether the variable may only be read: one of .rodata
// (frozen at load), or of a section without Memory.
func (v *Variable) ReadOnly() bool { return v.mm == nil || v.mm.ReadOnly() }

// Type returns the variable's BTF, or nil when the object has none.
func (v *Variable) Type() *btf.Var { return v.t }

func (v *Variable) String() string { return fmt.Sprintf("%s (type=%v)", v.name, v.t) }

// Set writes in, which must encode to exactly Size bytes (a fixed-size
// value, a pointer to one, or a byte slice, in host byte order), into the
// variable. A read-only variable fails with an error wrapping ErrReadOnly.
func (v *Variable) Set(in any) error {
	if v.mm == nil {
		return fmt.Errorf("variable %s: its section has no memory: %w", v.name, ErrNotSupported)
	}
	if v.mm.ReadOnly() {
		return fmt.Errorf("variable %s: %w", v.name, ErrReadOnly)
	}
	b, err := marshal(in, int(v.size))
	if err != nil {
		return fmt.Errorf("variable %s: %w", v.name, err)
	}
	if _, err := v.mm.WriteAt(b, int64(v.offset)); err != nil {
		return fmt.Errorf("variable %s: %w", v.name, err)
	}
	return nil
}

// Get decodes the variable's value into out: a pointer to a value of
// exactly Size bytes, or a byte slice of that length.
func (v *Variable) Get(out any) error {
	if v.mm == nil {
		return fmt.Errorf("variable %s: its section has no memory: %w", v.name, ErrNotSupported)
	}
	err := unmarshal(v.mm.b[v.offset:v.offset+v.size], out)
	runtime.KeepAlive(v.mm) // its cleanup may unmap the values
	if err != nil {
		return fmt.Errorf("variable %s: %w", v.name, err)
	}
	return nil
}

// VariablePointer returns a pointer to the variable as a T, in the memory
// its programs share, as cilium/ebpf's VariablePointer: stores through it
// are seen by the programs at once, and it reads what they write, with no
// synchronisation. T must be exactly the variable's size, contain no Go
// pointers (bools, numbers, arrays and structs of them) and fit the
// variable's alignment; otherwise the error wraps ErrInvalidType. A
// read-only variable fails with ErrReadOnly, one of a section without
// Memory with ErrNotSupported.
//
// cilium/ebpf keeps this behind a build tag, as its memory must then be
// allocated through the Go heap; bpfvm's values are off the heap, where a
// Go pointer does not keep them alive, so once a pointer is handed out the
// section's values stay mapped (and count as a writable mapping: Freeze
// fails) until the process exits.
func VariablePointer[T comparable](v *Variable) (*T, error) {
	if v.mm == nil {
		return nil, fmt.Errorf("variable pointer %s: its section has no memory: %w", v.name, ErrNotSupported)
	}
	if v.mm.ReadOnly() {
		return nil, fmt.Errorf("variable pointer %s: %w", v.name, ErrReadOnly)
	}
	t := reflect.TypeFor[T]()
	switch {
	case t.Size() != uintptr(v.size):
		return nil, fmt.Errorf("variable pointer %s: can't create %d-byte accessor to %d-byte variable: %w", v.name, t.Size(), v.size, ErrInvalidType)
	case hasGoPointers(t):
		return nil, fmt.Errorf("variable pointer %s: %v holds Go pointers: %w", v.name, t, ErrInvalidType)
	}
	p := unsafe.Pointer(&v.mm.b[v.offset])
	if uintptr(p)%uintptr(t.Align()) != 0 {
		return nil, fmt.Errorf("variable pointer %s: offset %d is not aligned for %v: %w", v.name, v.offset, t, ErrInvalidType)
	}
	if err := v.mm.escape(); err != nil {
		return nil, fmt.Errorf("variable pointer %s: %w", v.name, err)
	}
	return (*T)(p), nil
}

// hasGoPointers reports whether values of t hold anything but plain data.
func hasGoPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return hasGoPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasGoPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}
