package bpfvm

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/mapref"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// MapUpdateFlags control the behaviour of Map.Update. It is cilium/ebpf's
// type, so that its constants (ebpf.UpdateAny, …) work as bpfvm's.
type MapUpdateFlags = ebpf.MapUpdateFlags

// Update flags, cilium/ebpf's (the kernel's BPF_ANY, BPF_NOEXIST,
// BPF_EXIST, BPF_F_LOCK).
const (
	UpdateAny     = ebpf.UpdateAny
	UpdateNoExist = ebpf.UpdateNoExist
	UpdateExist   = ebpf.UpdateExist
	UpdateLock    = ebpf.UpdateLock
)

// Map is an eBPF map living in this process. It is safe for concurrent use
// by Go code and running programs.
//
// Close releases the user's reference: every method but the metadata
// getters then fails with an error wrapping ErrClosed, while programs that
// reference the map and maps of maps holding it keep using it; its memory
// is freed when the last of them lets go.
type Map struct {
	name   string
	m      maps.Map
	ncpu   int
	closed atomic.Bool
	// users counts the open Maps sharing m: this one and its clones
	// (Clone). The last Close closes m.
	users *refCount
	// memory is the Memory of this reference, made on first use.
	memory atomic.Pointer[Memory]
	// view marks a Map for a map another collection created, reached at
	// run time (Result.Redirect through a map of maps): it holds no
	// reference, so Close only closes the view.
	view bool
	// access restricts this reference to reading (maps.FlagRdonly) or
	// writing (maps.FlagWronly) the contents, as a file descriptor the
	// kernel's BPF_OBJ_GET opened with BPF_F_RDONLY or BPF_F_WRONLY
	// (LoadPinOptions).
	access uint32
	// pin is where this reference is pinned (Pin).
	pin pinState
	// byID marks references from NewMapFromID: they hold the map as a
	// program does (Acquire), not as its creator, so that the last of
	// them releases it rather than closing it.
	byID bool
}

// NewMap creates a map outside any collection, as cilium/ebpf's NewMap:
// for Go code, a collection's MapReplacements, or a map of maps' values. A
// per-CPU map has a value per GOMAXPROCS CPUs, the NumCPU a collection
// takes by default.
func NewMap(spec *MapSpec) (*Map, error) { return NewMapWithOptions(spec, MapOptions{}) }

// NewMapWithOptions creates a map outside any collection, pinned by name
// in opts.Pins if its spec says so (see MapOptions). Its initial contents
// may hold values, *Map and *Program, but not the names of maps or
// programs, which only a collection resolves.
func NewMapWithOptions(spec *MapSpec, opts MapOptions) (*Map, error) {
	if spec == nil {
		return nil, fmt.Errorf("create map: nil spec")
	}
	if deferredContents(spec) {
		return nil, fmt.Errorf("map %s: initial contents name maps or programs, which only a collection resolves", spec.Name)
	}
	// No domain: the map's retirements wait for the runs of every live
	// collection, as any map's do.
	return newPinnedMap(spec, opts, runtime.GOMAXPROCS(0), nil)
}

// NewMapFromID returns a new reference to the map of id (Map.ID, a map of
// maps' value), as cilium/ebpf's: it fails with an error wrapping
// os.ErrNotExist (ENOENT) when no live map has it. A per-CPU map's values
// have as many elements as its collection has CPUs (CollectionOptions.
// NumCPU), which may differ from PossibleCPU.
func NewMapFromID(id MapID) (*Map, error) {
	mm, ok := maps.ByID(uint32(id))
	if !ok || !mm.Acquire() {
		return nil, fmt.Errorf("map id %d: %w", id, syscall.ENOENT)
	}
	return &Map{name: mm.Spec().Name, m: mm, ncpu: maps.NumCPU(mm), users: newRefCount(), byID: true}, nil
}

func newMap(spec *ebpf.MapSpec, c *runner.CPUs) (*Map, error) {
	return createMap(spec, c.Len(), c.Domain())
}

// createMap creates a map of ncpu CPUs in reclamation domain d (nil
// outside a collection) and finalizes it.
func createMap(spec *ebpf.MapSpec, ncpu int, d *maps.Domain) (*Map, error) {
	s, err := createSpec(spec, ncpu)
	if err != nil {
		return nil, err
	}
	if s.Value != nil {
		if err := maps.CheckValueBTF(s.Value); err != nil {
			return nil, fmt.Errorf("map %s: load BTF: %w", spec.Name, err)
		}
	}
	opts := maps.Options{NumCPU: ncpu, Domain: d, Programs: runner.Refs{}}
	m, err := maps.New(s, opts)
	if err != nil && s.Value != nil && (errors.Is(err, syscall.EINVAL) || errors.Is(err, maps.ErrKernelNotSupported)) {
		// cilium/ebpf retries a creation the kernel refuses with
		// EINVAL or ENOTSUPP without the BTF: the map then has no
		// special fields and no BTF, and neither has ours (a socket
		// storage, which needs BTF, then fails).
		s.Key, s.Value = nil, nil
		m, err = maps.New(s, opts)
	}
	if err != nil {
		return nil, err
	}
	mm := &Map{name: spec.Name, m: m, ncpu: ncpu, users: newRefCount()}
	if err := mm.finalize(spec); err != nil {
		mm.Close()
		return nil, err
	}
	return mm, nil
}

// finalize writes a map's initial contents but those naming maps or
// programs (which the collection writes once they all exist), and freezes
// it if it is frozen on load and has no such contents, as cilium/ebpf does
// for a map it creates or reuses from a pin.
func (mm *Map) finalize(spec *ebpf.MapSpec) error {
	for _, kv := range spec.Contents {
		if _, ok := kv.Value.(string); ok {
			continue // a map or program by name: filled in by the collection
		}
		if err := mm.Update(kv.Key, kv.Value, UpdateAny); err != nil {
			return fmt.Errorf("map %s: initial contents: %w", spec.Name, err)
		}
	}
	if freezeOnLoad(spec) && !deferredContents(spec) {
		if err := mm.Freeze(); err != nil {
			return err
		}
	}
	return nil
}

// createSpec is the maps.Spec that spec creates in a collection of ncpu
// runners, with the fields cilium/ebpf fills in at load: a perf event
// array's sizes and one slot per CPU when none are given, a map of maps'
// value size, and BPF_F_MMAPABLE on the data sections' arrays (which
// Variables and Memory then access directly).
func createSpec(spec *ebpf.MapSpec, ncpu int) (maps.Spec, error) {
	s, err := mapSpec(spec)
	if err != nil {
		return s, err
	}
	switch s.Type {
	case maps.PerfEventArray:
		// As cilium/ebpf and libbpf fill them in: one slot per CPU, and
		// the kernel's only sizes when none are given.
		if s.KeySize == 0 {
			s.KeySize = 4
		}
		if s.ValueSize == 0 {
			s.ValueSize = 4
		}
		if s.MaxEntries == 0 {
			s.MaxEntries = uint32(ncpu)
		}
	case maps.ArrayOfMaps, maps.HashOfMaps:
		if s.ValueSize == 0 {
			s.ValueSize = 4
		}
	case maps.Array:
		if isDataSection(spec.Name) {
			s.Flags |= maps.FlagMmapable
		}
	}
	return s, nil
}

// isDataSection reports whether a map holds an ELF data section (.bss,
// .data*, .rodata*), as cilium/ebpf names them.
func isDataSection(name string) bool {
	return name == ".bss" || strings.HasPrefix(name, ".data") || strings.HasPrefix(name, ".rodata")
}

// freezeOnLoad reports whether a map is frozen once its contents are
// written, before any program that uses it is verified: the constant data
// (.rodata*) and .kconfig sections, as cilium/ebpf and libbpf freeze them.
// The verifier may then take their values as constants.
func freezeOnLoad(spec *ebpf.MapSpec) bool {
	return strings.HasPrefix(spec.Name, ".rodata") || spec.Name == ".kconfig"
}

// deferredContents reports whether some of a map's initial contents name
// maps or programs, which the collection writes once they all exist.
func deferredContents(spec *ebpf.MapSpec) bool {
	for _, kv := range spec.Contents {
		if _, ok := kv.Value.(string); ok {
			return true
		}
	}
	return false
}

// Backing returns the map's implementation with a reference, for the
// reader packages (perf, ringbuf); only packages of this module can call
// it.
func (m *Map) Backing(mapref.Token) (maps.Map, error) {
	if m == nil {
		return nil, fmt.Errorf("nil map: %w", maps.ErrInvalid)
	}
	if err := m.hold("reader"); err != nil {
		return nil, err
	}
	return m.m, nil
}

func mapSpec(spec *ebpf.MapSpec) (maps.Spec, error) {
	s := maps.Spec{
		Name:       spec.Name,
		Type:       maps.Type(spec.Type),
		KeySize:    spec.KeySize,
		ValueSize:  spec.ValueSize,
		MaxEntries: spec.MaxEntries,
		Flags:      spec.Flags,
		MapExtra:   spec.MapExtra,
	}
	if keyBTFFits(spec) {
		s.Key, s.Value = spec.Key, spec.Value
	}
	if spec.InnerMap != nil {
		inner, err := mapSpec(spec.InnerMap)
		if err != nil {
			return s, err
		}
		s.InnerMap = &inner
	}
	return s, nil
}

// keyBTFFits reports whether the kernel takes the BTF of a map's key and
// value as map_check_btf checks the key: a key type of the key's size (a
// 32-bit int for arrays), or none for the single value of an array that
// holds a data section. Otherwise it refuses the BTF (EINVAL), and
// cilium/ebpf creates the map without it.
func keyBTFFits(spec *ebpf.MapSpec) bool {
	if spec.Value == nil {
		return false
	}
	if _, void := spec.Key.(*btf.Void); spec.Key == nil || void {
		_, sec := spec.Value.(*btf.Datasec)
		return spec.Type == ebpf.Array && spec.MaxEntries == 1 && sec
	}
	size, err := btf.Sizeof(spec.Key)
	if err != nil || uint32(size) != spec.KeySize {
		return false
	}
	switch spec.Type {
	case ebpf.Array, ebpf.PerCPUArray:
		i, ok := btf.UnderlyingType(spec.Key).(*btf.Int)
		return ok && i.Size == 4
	}
	return true
}

// Name returns the map's name.
func (m *Map) Name() string { return m.name }

// KeySize returns the size of a key in bytes.
func (m *Map) KeySize() uint32 { return m.m.Spec().KeySize }

// ValueSize returns the size of a value in bytes.
func (m *Map) ValueSize() uint32 { return m.m.Spec().ValueSize }

// MaxEntries returns the capacity of the map.
func (m *Map) MaxEntries() uint32 { return m.m.Spec().MaxEntries }

// Flags returns the map's flags.
func (m *Map) Flags() uint32 { return m.m.Spec().Flags }

// Type returns the map's type.
func (m *Map) Type() ebpf.MapType { return ebpf.MapType(m.m.Spec().Type) }

// ID returns the map's id, which Go code puts into maps of maps.
func (m *Map) ID() uint32 { return m.m.ID() }

// hold keeps the map's memory alive for a Go-side operation, which must
// call m.m.Release when done; it fails once the map is closed.
func (m *Map) hold(op string) error {
	if m.closed.Load() || !m.m.Acquire() {
		return fmt.Errorf("map %s: %s: %w", m.name, op, ErrClosed)
	}
	return nil
}

// access is what a Go-side operation does to a map's contents.
type access uint8

const (
	accessRead access = 1 << iota
	accessWrite
)

// begin holds the map (see hold) for an operation that reads or writes
// its contents, with the kernel's EPERM for what the map refuses: writes to
// a BPF_F_RDONLY or frozen map, reads of a BPF_F_WRONLY one (the
// syscall-side permissions, checked before the arguments as the kernel
// does). A write keeps Freeze out until end.
func (m *Map) begin(op string, a access) error {
	if err := m.hold(op); err != nil {
		return err
	}
	flags := m.m.Spec().Flags | m.access
	if a&accessRead != 0 && flags&maps.FlagWronly != 0 || a&accessWrite != 0 && flags&maps.FlagRdonly != 0 {
		m.m.Release()
		return fmt.Errorf("map %s: %s: %w", m.name, op, ErrPermission)
	}
	if a&accessWrite != 0 {
		if err := m.m.BeginWrite(); err != nil {
			m.m.Release()
			return fmt.Errorf("map %s: %s: %w", m.name, op, err)
		}
	}
	return nil
}

// end ends an operation started by begin.
func (m *Map) end(a access) {
	if a&accessWrite != 0 {
		m.m.EndWrite()
	}
	m.m.Release()
}

// Freeze makes the map read-only to Go code, as the kernel's
// BPF_MAP_FREEZE: every later Go-side write fails with an error wrapping
// ErrPermission, while programs may still write unless the map is
// BPF_F_RDONLY_PROG. Once a map read-only to programs is frozen, the
// verifier treats its contents as constants. Freezing while a Go-side
// write is in progress fails with ErrBusy, and once Freeze returns no write
// can land. Freezing a frozen or BPF_F_RDONLY map fails with ErrPermission,
// as in the kernel, where freezing needs a writable map.
func (m *Map) Freeze() error {
	if err := m.hold("freeze"); err != nil {
		return err
	}
	defer m.m.Release()
	if fields, _ := m.m.Spec().Fields(); len(fields) > 0 {
		// The kernel's map_freeze: ENOTSUPP for values with special
		// fields.
		return fmt.Errorf("map %s: freeze: values with special fields: %w", m.name, maps.ErrKernelNotSupported)
	}
	if (m.m.Spec().Flags|m.access)&maps.FlagRdonly != 0 {
		return fmt.Errorf("map %s: freeze: %w", m.name, ErrPermission)
	}
	if err := m.m.Freeze(); err != nil {
		return fmt.Errorf("map %s: %w", m.name, err)
	}
	return nil
}

// IsFrozen reports whether the map is frozen (Freeze).
func (m *Map) IsFrozen() bool { return m.m.Frozen() }

func (m *Map) perCPU() bool { return m.m.Spec().Type.PerCPU() }

func (m *Map) key(key any) ([]byte, error) {
	if key == nil && m.KeySize() == 0 {
		// Keyless maps (queues, stacks, bloom filters) take a nil key,
		// as in cilium/ebpf.
		return nil, nil
	}
	k, err := marshal(key, int(m.KeySize()))
	if err != nil {
		return nil, fmt.Errorf("map %s: key: %w", m.name, err)
	}
	return k, nil
}

func (m *Map) value(value any) ([]byte, error) {
	var v []byte
	var err error
	if m.perCPU() {
		v, err = marshalPerCPU(value, int(m.ValueSize()), m.ncpu)
	} else {
		v, err = marshal(value, int(m.ValueSize()))
	}
	if err != nil {
		return nil, fmt.Errorf("map %s: value: %w", m.name, err)
	}
	return v, nil
}

func (m *Map) decode(b []byte, valueOut any) error {
	var err error
	if m.perCPU() {
		err = unmarshalPerCPU(b, int(m.ValueSize()), m.ncpu, valueOut)
	} else {
		err = unmarshal(b, valueOut)
	}
	if err != nil {
		return fmt.Errorf("map %s: value: %w", m.name, err)
	}
	return nil
}

// Lookup copies the value for key into valueOut: a pointer to a fixed-size
// value or a byte slice; for per-CPU maps a pointer to a slice, which gets
// one element per CPU.
func (m *Map) Lookup(key, valueOut any) error {
	if err := m.begin("lookup", accessRead); err != nil {
		return err
	}
	defer m.end(accessRead)
	k, err := m.key(key)
	if err != nil {
		return err
	}
	if m.m.Spec().Type.ValueIsKey() {
		// A bloom filter's lookup tests the value valueOut holds, as
		// the kernel's lookup syscall (and cilium/ebpf's Lookup(nil,
		// &v)): nil when it may be present.
		v, err := m.value(valueOut)
		if err != nil {
			return err
		}
		if err := m.m.LookupBytes(k, v); err != nil {
			return fmt.Errorf("map %s: lookup: %w", m.name, err)
		}
		return nil
	}
	size := maps.ValueSizeBytes(m.m.Spec(), m.ncpu)
	if !m.perCPU() {
		if out, ok := outPlain(valueOut, size); ok {
			// Straight into the caller's value: no allocation, no copy.
			// Lookups copy nothing before they know the key is there.
			if err := m.m.LookupBytes(k, out); err != nil {
				return fmt.Errorf("map %s: lookup: %w", m.name, err)
			}
			return nil
		}
	}
	v := make([]byte, size)
	if err := m.m.LookupBytes(k, v); err != nil {
		return fmt.Errorf("map %s: lookup: %w", m.name, err)
	}
	return m.decode(v, valueOut)
}

// outPlain returns the memory a lookup can write its value of size bytes
// to in place: a byte slice of that length, or a pointer to a plainType of
// that size which does not decode itself (encoding.BinaryUnmarshaler).
func outPlain(out any, size int) ([]byte, bool) {
	switch o := out.(type) {
	case []byte:
		return o, len(o) == size
	case encoding.BinaryUnmarshaler, nil:
		return nil, false
	}
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || size == 0 {
		return nil, false
	}
	if t := rv.Elem().Type(); !plainType(t) || int(t.Size()) != size {
		return nil, false
	}
	return unsafe.Slice((*byte)(rv.UnsafePointer()), size), true
}

// LookupAndDelete copies the value for key into valueOut and removes key.
func (m *Map) LookupAndDelete(key, valueOut any) error {
	if err := m.begin("lookup and delete", accessRead|accessWrite); err != nil {
		return err
	}
	defer m.end(accessRead | accessWrite)
	k, err := m.key(key)
	if err != nil {
		return err
	}
	v := make([]byte, maps.ValueSizeBytes(m.m.Spec(), m.ncpu))
	if err := m.m.LookupAndDelete(k, v); err != nil {
		return fmt.Errorf("map %s: lookup and delete: %w", m.name, err)
	}
	return m.decode(v, valueOut)
}

// Put sets the value for key, creating or replacing it.
func (m *Map) Put(key, value any) error { return m.Update(key, value, UpdateAny) }

// Update sets the value for key according to flags.
func (m *Map) Update(key, value any, flags MapUpdateFlags) error {
	if err := m.begin("update", accessWrite); err != nil {
		return err
	}
	defer m.end(accessWrite)
	k, err := m.key(key)
	if err != nil {
		return err
	}
	v, err := m.value(value)
	if err != nil {
		return err
	}
	if err := m.m.UpdateBytes(k, v, uint64(flags)); err != nil {
		return fmt.Errorf("map %s: update: %w", m.name, err)
	}
	return nil
}

// Delete removes key.
func (m *Map) Delete(key any) error {
	if err := m.begin("delete", accessWrite); err != nil {
		return err
	}
	defer m.end(accessWrite)
	k, err := m.key(key)
	if err != nil {
		return err
	}
	var kp unsafe.Pointer // keyless maps (queues, bloom filters) refuse as their type does
	if len(k) != 0 {
		kp = unsafe.Pointer(&k[0])
	}
	if err := m.m.Delete(kp); err != nil {
		return fmt.Errorf("map %s: delete: %w", m.name, err)
	}
	return nil
}

// NextKey writes the key after key (the first key when key is nil) into
// nextKeyOut. At the end it returns an error wrapping ErrKeyNotExist.
func (m *Map) NextKey(key, nextKeyOut any) error {
	if err := m.begin("next key", accessRead); err != nil {
		return err
	}
	defer m.end(accessRead)
	var k []byte
	if key != nil {
		var err error
		if k, err = m.key(key); err != nil {
			return err
		}
	}
	next := make([]byte, m.KeySize())
	if err := m.m.NextKey(k, next); err != nil {
		return fmt.Errorf("map %s: next key: %w", m.name, err)
	}
	return unmarshal(next, nextKeyOut)
}

// Iterate returns an iterator over the map's keys and values.
func (m *Map) Iterate() *MapIterator { return &MapIterator{m: m} }

// MapIterator iterates a map, as cilium/ebpf's does: keys deleted during
// iteration may make it restart from the first key, as in the kernel.
type MapIterator struct {
	m    *Map
	prev []byte
	done bool
	err  error
	n    uint32
}

// Next decodes the next key and value into keyOut and valueOut and reports
// whether there was one. On a closed map it stops with an error wrapping
// ErrClosed.
func (it *MapIterator) Next(keyOut, valueOut any) bool {
	if it.done || it.err != nil {
		return false
	}
	m := it.m
	if err := m.begin("iterate", accessRead); err != nil {
		it.err = err
		return false
	}
	defer m.end(accessRead)
	for {
		next := make([]byte, m.KeySize())
		if err := m.m.NextKey(it.prev, next); err != nil {
			if errors.Is(err, maps.ErrKeyNotExist) {
				it.done = true
			} else {
				it.err = fmt.Errorf("map %s: next key: %w", m.name, err)
			}
			return false
		}
		it.prev = next
		v := make([]byte, maps.ValueSizeBytes(m.m.Spec(), m.ncpu))
		if err := m.m.LookupBytes(next, v); err != nil {
			if errors.Is(err, maps.ErrKeyNotExist) {
				continue // deleted since NextKey
			}
			it.err = fmt.Errorf("map %s: lookup: %w", m.name, err)
			return false
		}
		it.n++
		if it.n > m.MaxEntries()*4+16 {
			it.err = fmt.Errorf("map %s: iteration aborted: %w", m.name, ErrIterationAborted)
			return false
		}
		if err := unmarshal(next, keyOut); err != nil {
			it.err = err
			return false
		}
		if err := m.decode(v, valueOut); err != nil {
			it.err = err
			return false
		}
		return true
	}
}

// Err returns the error that stopped the iteration, if any.
func (it *MapIterator) Err() error { return it.err }

// Close releases the user's reference to the map (see Map). Closing twice,
// or concurrently with anything, is safe. The last of a map and its clones
// to close empties a prog_array, or a perf event array without
// BPF_F_PRESERVE_ELEMS, as the kernel does when the last file descriptor
// of a map closes.
func (m *Map) Close() error {
	if m.closed.Swap(true) || m.view {
		return nil
	}
	if m.users != nil && !m.users.release() {
		return nil
	}
	if m.byID {
		m.m.Release()
		return nil
	}
	return m.m.Close()
}

// Clone returns another reference to the same map, as cilium/ebpf's
// (which duplicates the file descriptor): the contents are shared, and
// each reference is closed on its own. It fails with ErrClosed on a closed
// map. Clone of a nil Map is nil.
func (m *Map) Clone() (*Map, error) {
	if m == nil {
		return nil, nil
	}
	if !m.closed.Load() && m.users != nil && m.users.hold() {
		return &Map{name: m.name, m: m.m, ncpu: m.ncpu, users: m.users, access: m.access, pin: pinState{ns: m.pin.ns}, byID: m.byID}, nil
	}
	return nil, fmt.Errorf("map %s: clone: %w", m.name, ErrClosed)
}

// directValue returns the address of the value of key 0 of a single-value
// array, the target of LD_IMM64 with PseudoMapValue.
func directValue(m maps.Map) (uint64, error) {
	spec := m.Spec()
	if !spec.Type.DirectValue() {
		return 0, fmt.Errorf("direct value access to map %s of type %d: %w", spec.Name, spec.Type, ErrNotSupported)
	}
	var key uint32
	return vm.Addr(m.Lookup(unsafe.Pointer(&key), 0)), nil
}

// marshal encodes a key or value of exactly size bytes: a byte slice, or a
// fixed-size value or pointer to one in host byte order, as cilium/ebpf does.
func marshal(v any, size int) ([]byte, error) {
	switch v := v.(type) {
	case []byte:
		if len(v) != size {
			return nil, fmt.Errorf("%d bytes, want %d", len(v), size)
		}
		return v, nil
	case nil:
		return nil, fmt.Errorf("nil value")
	case *Map:
		// Maps of maps hold maps by id, as the kernel's hold them by file
		// descriptor on the syscall side.
		if size != 4 {
			return nil, fmt.Errorf("map as a %d byte value, want 4", size)
		}
		if v.closed.Load() {
			return nil, fmt.Errorf("map %s: %w", v.name, ErrClosed)
		}
		return binary.NativeEndian.AppendUint32(nil, v.ID()), nil
	case *Program:
		// A prog_array holds programs by id, as the kernel's holds them
		// by file descriptor on the syscall side.
		if size != 4 {
			return nil, fmt.Errorf("program as a %d byte value, want 4", size)
		}
		if v.closed() {
			return nil, fmt.Errorf("program %s: %w", v.name, ErrClosed)
		}
		return binary.NativeEndian.AppendUint32(nil, v.ID()), nil
	case encoding.BinaryMarshaler:
		// As cilium/ebpf's sysenc: netip.Addr keys, for one.
		b, err := v.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("marshal %T: %w", v, err)
		}
		if len(b) != size {
			return nil, fmt.Errorf("%T doesn't marshal to %d bytes", v, size)
		}
		return b, nil
	case string:
		if len(v) != size {
			return nil, fmt.Errorf("%d bytes, want %d", len(v), size)
		}
		return []byte(v), nil
	}
	// Fast paths for the common key and value types; binary.Write's
	// reflection costs more than the map operation itself. Plain values
	// are read in place, without an allocation.
	if b, ok := marshalPlain(v, size); ok {
		return b, nil
	}
	if b, ok := marshalInt(v); ok {
		if len(b) != size {
			return nil, fmt.Errorf("%T is %d bytes, want %d", v, len(b), size)
		}
		return b, nil
	}
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.NativeEndian, v); err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	if buf.Len() != size {
		return nil, fmt.Errorf("%T is %d bytes, want %d", v, buf.Len(), size)
	}
	return buf.Bytes(), nil
}

// marshalPerCPU encodes a slice of ncpu values, each padded to 8 bytes.
func marshalPerCPU(v any, size, ncpu int) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Slice {
		return nil, fmt.Errorf("per-CPU value must be a slice, not %T", v)
	}
	if rv.Len() != ncpu {
		return nil, fmt.Errorf("per-CPU value has %d elements, want %d (one per CPU)", rv.Len(), ncpu)
	}
	stride := (size + 7) &^ 7
	out := make([]byte, stride*ncpu)
	for i := range ncpu {
		b, err := marshal(rv.Index(i).Interface(), size)
		if err != nil {
			return nil, fmt.Errorf("CPU %d: %w", i, err)
		}
		copy(out[i*stride:], b)
	}
	return out, nil
}

// unmarshalPerCPU decodes ncpu padded values into a pointer to a slice.
func unmarshalPerCPU(b []byte, size, ncpu int, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("per-CPU value: need a pointer to a slice, not %T", out)
	}
	sv := rv.Elem()
	if sv.Len() != ncpu {
		sv.Set(reflect.MakeSlice(sv.Type(), ncpu, ncpu))
	}
	stride := (size + 7) &^ 7
	for i := range ncpu {
		elem := sv.Index(i)
		chunk := b[i*stride : i*stride+size]
		if elem.Kind() == reflect.Slice && elem.Type().Elem().Kind() == reflect.Uint8 {
			elem.SetBytes(append([]byte(nil), chunk...))
			continue
		}
		if err := unmarshal(chunk, elem.Addr().Interface()); err != nil {
			return fmt.Errorf("CPU %d: %w", i, err)
		}
	}
	return nil
}

// unmarshal decodes b into out: a byte slice of the same length, or a
// pointer to a fixed-size value.
func unmarshal(b []byte, out any) error {
	switch o := out.(type) {
	case []byte:
		if len(o) != len(b) {
			return fmt.Errorf("%d byte buffer for a %d byte value", len(o), len(b))
		}
		copy(o, b)
		return nil
	case *[]byte:
		*o = append((*o)[:0], b...)
		return nil
	case *string:
		*o = string(b)
		return nil
	case encoding.BinaryUnmarshaler:
		return o.UnmarshalBinary(b)
	}
	if ok, err := unmarshalInt(b, out); ok {
		return err
	}
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode into %T: need a non-nil pointer or a byte slice", out)
	}
	if t := rv.Elem().Type(); plainType(t) && int(t.Size()) == len(b) {
		copy(unsafe.Slice((*byte)(rv.UnsafePointer()), len(b)), b)
		return nil
	}
	return binary.Read(bytes.NewReader(b), binary.NativeEndian, out)
}

// plainType reports whether values of t are laid out in memory exactly as
// binary.Write encodes them in native byte order: fixed-size numbers,
// arrays of them and structs of them without padding or blank fields.
// Their bytes are copied, not encoded field by field: the reflection of
// binary.Write costs several times the map operation (a struct key's
// lookup from 1125 to about 300 ns).
func plainType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Array:
		return plainType(t.Elem())
	case reflect.Struct:
		var sum uintptr
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" || !plainType(f.Type) {
				return false
			}
			sum += f.Type.Size()
		}
		return sum == t.Size()
	}
	return false
}

// marshalPlain returns the bytes of a value (or pointer to one) of a
// plainType of exactly size bytes, without copying them: like a []byte
// argument, the result aliases the caller's memory (or the interface's
// copy of a value) and is only read.
func marshalPlain(v any, size int) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	t := rv.Type()
	var p unsafe.Pointer
	if t.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, false
		}
		t, p = t.Elem(), rv.UnsafePointer()
	} else {
		// A value without pointers is stored indirectly: the
		// interface's data word points at its copy.
		p = (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
	}
	if !plainType(t) || int(t.Size()) != size || size == 0 {
		return nil, false
	}
	return unsafe.Slice((*byte)(p), size), true
}

func marshalInt(v any) ([]byte, bool) {
	e := binary.NativeEndian
	switch v := v.(type) {
	case uint32:
		return e.AppendUint32(nil, v), true
	case int32:
		return e.AppendUint32(nil, uint32(v)), true
	case uint64:
		return e.AppendUint64(nil, v), true
	case int64:
		return e.AppendUint64(nil, uint64(v)), true
	case uint16:
		return e.AppendUint16(nil, v), true
	case uint8:
		return []byte{v}, true
	case *uint32:
		return e.AppendUint32(nil, *v), true
	case *uint64:
		return e.AppendUint64(nil, *v), true
	}
	return nil, false
}

func unmarshalInt(b []byte, out any) (bool, error) {
	e := binary.NativeEndian
	size := 0
	switch out.(type) {
	case *uint8:
		size = 1
	case *uint16:
		size = 2
	case *uint32, *int32:
		size = 4
	case *uint64, *int64:
		size = 8
	default:
		return false, nil
	}
	if len(b) != size {
		return true, fmt.Errorf("decode %d bytes into %T", len(b), out)
	}
	switch o := out.(type) {
	case *uint8:
		*o = b[0]
	case *uint16:
		*o = e.Uint16(b)
	case *uint32:
		*o = e.Uint32(b)
	case *int32:
		*o = int32(e.Uint32(b))
	case *uint64:
		*o = e.Uint64(b)
	case *int64:
		*o = int64(e.Uint64(b))
	}
	return true, nil
}

// contextBytes returns RunOptions.Context as bytes: as given, or a
// fixed-size value in host byte order.
func contextBytes(in any) ([]byte, error) {
	if b, ok := in.([]byte); ok {
		return b, nil
	}
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.NativeEndian, in); err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	return buf.Bytes(), nil
}

// writeContext copies the context area to RunOptions.ContextOut.
func writeContext(out any, ctx []byte) error {
	if out == nil {
		return nil
	}
	if b, ok := out.([]byte); ok {
		copy(b, ctx)
		return nil
	}
	n := binary.Size(out)
	if n < 0 || n > len(ctx) {
		return fmt.Errorf("context out: %T does not fit a %d byte context", out, len(ctx))
	}
	return unmarshal(ctx[:n], out)
}
