package bpfvm

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

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
