package maps

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// Maps of maps.
const (
	ArrayOfMaps Type = 12
	HashOfMaps  Type = 13
)

// lookupHelper is the one helper maps of maps take.
var lookupHelper = []string{"bpf_map_lookup_elem"}

// The maps of maps, BPF_MAP_TYPE_ARRAY_OF_MAPS and HASH_OF_MAPS: programs
// only look their inner maps up.
var (
	arrayOfMapsInfo = typeInfo{maps: arraysOfMaps{}, kernelStruct: "bpf_array", helpers: lookupHelper, onlyHelpers: true, ofMaps: true}
	hashOfMapsInfo  = typeInfo{maps: hashesOfMaps{}, kernelStruct: "bpf_htab", helpers: lookupHelper, onlyHelpers: true, ofMaps: true}
)

// arraysOfMaps and hashesOfMaps create and validate maps of maps.
type (
	arraysOfMaps struct{}
	hashesOfMaps struct{}
)

func (arraysOfMaps) create(s Spec, o Options) (Map, error) { return newArrayOfMaps(s, o) }
func (arraysOfMaps) check(s Spec) error                    { return validateArray(s) }
func (hashesOfMaps) create(s Spec, o Options) (Map, error) { return newHashOfMaps(s, o) }
func (hashesOfMaps) check(s Spec) error                    { return validateHash(s) }

// Maps of maps hold other maps: Go code stores an inner map by its id (IDOf,
// where the kernel takes a file descriptor) and reads the id back; programs
// look up the inner map's handle. The inner map must match the template
// Spec.InnerMap (checkInner).

// innerRefs holds a reference (Acquire) to each inner map for every slot of
// an outer map that holds it. A slot emptied drops its reference at once:
// a run that looked the inner map up before is protected by the grace
// period that the map's last reference starts (Defer), as the kernel's RCU
// keeps an inner map alive until the runs that found it end.
type innerRefs struct {
	// ncpu is the outer map's number of CPUs: the runners of the programs
	// that use it, whose CPU numbers index per-CPU inner maps.
	ncpu int
	mu   sync.Mutex
	held map[uint64]*innerRef // by handle
}

type innerRef struct {
	m Map
	n int // slots holding it
}

// resolveInner finds the inner map with id and checks it against the
// template and the outer map's number of CPUs.
func resolveInner(tmpl *Spec, ncpu int, value []byte) (Map, uint32, error) {
	if len(value) != 4 {
		return nil, 0, fmt.Errorf("value of %d bytes, want 4 (a map id): %w", len(value), ErrInvalid)
	}
	id := binary.NativeEndian.Uint32(value)
	m, ok := ByID(id)
	if !ok {
		return nil, 0, fmt.Errorf("no map with id %d: %w", id, ErrInvalid)
	}
	if err := checkInner(tmpl, m); err != nil {
		return nil, 0, err
	}
	// The programs of the outer map index a per-CPU inner map's values
	// by their runner's CPU number: the inner map must have as many (the
	// kernel has one number of CPUs for all maps).
	if n := numCPU(m); tmpl.Type.PerCPU() && n != ncpu {
		return nil, 0, fmt.Errorf("inner map %s has values for %d CPUs, want %d (the CPUs of the map of maps' collection): %w", m.Spec().Name, n, ncpu, ErrInvalid)
	}
	return m, id, nil
}

// hold takes a reference to m for a slot about to store it; it fails when
// m is being freed.
func (r *innerRefs) hold(m Map) error {
	if !m.Acquire() {
		return fmt.Errorf("map %s: %w", m.Spec().Name, ErrClosed)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = make(map[uint64]*innerRef)
	}
	h := m.Handle()
	ref := r.held[h]
	if ref == nil {
		ref = &innerRef{m: m}
		r.held[h] = ref
	}
	ref.n++
	return nil
}

// release drops the reference of a slot just emptied (or never published).
func (r *innerRefs) release(handle uint64) {
	r.mu.Lock()
	ref := r.held[handle]
	if ref != nil {
		if ref.n--; ref.n <= 0 {
			delete(r.held, handle)
		}
	}
	r.mu.Unlock()
	if ref != nil {
		ref.m.Release()
	}
}

// count returns how many inner maps are referenced, for tests.
func (r *innerRefs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}

// clear drops every reference: the outer map is being freed.
func (r *innerRefs) clear() {
	r.mu.Lock()
	held := r.held
	r.held = nil
	r.mu.Unlock()
	for _, ref := range held {
		for range ref.n {
			ref.m.Release()
		}
	}
}

// arrayOfMaps is BPF_MAP_TYPE_ARRAY_OF_MAPS: max_entries off-heap uint64
// slots holding inner map handles, 0 when empty, so native code can inline
// a lookup as one bounds check and one load.
type arrayOfMaps struct {
	header
	spec Spec
	mem  *vm.Mem
	base uint64

	mu   sync.Mutex // Go-side writers
	ids  []uint32
	refs innerRefs
}

// Header field offsets of arrays of maps, relative to HeaderFields.
const (
	ArrayOfMapsFieldBase       = 0 // uint64: address of the handle slots
	ArrayOfMapsFieldMaxEntries = 8 // uint32
)

func newArrayOfMaps(spec Spec, opts Options) (Map, error) {
	mem, err := vm.Alloc(int(spec.MaxEntries) * 8)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	a := &arrayOfMaps{spec: spec, mem: mem, base: mem.Addr(), ids: make([]uint32, spec.MaxEntries)}
	a.refs.ncpu = opts.NumCPU
	if err := a.header.init(a); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	*(*uint64)(a.field(ArrayOfMapsFieldBase)) = a.base
	*(*uint32)(a.field(ArrayOfMapsFieldMaxEntries)) = spec.MaxEntries
	return a, nil
}

func (a *arrayOfMaps) Spec() Spec { return a.spec }

// Memory is empty: programs get inner map handles, not pointers into the
// outer map.
func (a *arrayOfMaps) Memory() []vm.Region { return nil }

func (a *arrayOfMaps) slot(i uint32) *uint64 { return (*uint64)(vm.Ptr(a.base + uint64(i)*8)) }

// Lookup returns the inner map's handle as a pointer, or nil.
func (a *arrayOfMaps) Lookup(key unsafe.Pointer, cpu int) unsafe.Pointer {
	i := *(*uint32)(key)
	if i >= a.spec.MaxEntries {
		return nil
	}
	if h := atomic.LoadUint64(a.slot(i)); h != 0 {
		return vm.Ptr(h)
	}
	return nil
}

func (a *arrayOfMaps) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of an array_of_maps from a program: %w", ErrNotSupported)
}

// Delete empties a slot: ErrFull (E2BIG) out of range, ErrKeyNotExist when
// already empty, as the kernel.
func (a *arrayOfMaps) Delete(key unsafe.Pointer) error {
	i := *(*uint32)(key)
	if i >= a.spec.MaxEntries {
		return fmt.Errorf("index %d of %d: %w", i, a.spec.MaxEntries, ErrFull)
	}
	a.mu.Lock()
	old := atomic.SwapUint64(a.slot(i), 0)
	a.ids[i] = 0
	a.mu.Unlock()
	if old == 0 {
		return ErrKeyNotExist
	}
	a.refs.release(old)
	return nil
}

// LookupBytes writes the inner map's id.
func (a *arrayOfMaps) LookupBytes(key, value []byte) error {
	i, err := index4(key)
	if err != nil {
		return err
	}
	if len(value) != 4 {
		return fmt.Errorf("value of %d bytes, want 4: %w", len(value), ErrInvalid)
	}
	if i >= a.spec.MaxEntries {
		return ErrKeyNotExist
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if atomic.LoadUint64(a.slot(i)) == 0 {
		return ErrKeyNotExist
	}
	binary.NativeEndian.PutUint32(value, a.ids[i])
	return nil
}

// UpdateBytes stores the inner map whose id is value. Only UpdateAny is
// allowed, as for the kernel's fd arrays.
func (a *arrayOfMaps) UpdateBytes(key, value []byte, flags uint64) error {
	i, err := index4(key)
	if err != nil {
		return err
	}
	if flags != UpdateAny {
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	}
	if i >= a.spec.MaxEntries {
		return fmt.Errorf("index %d of %d: %w", i, a.spec.MaxEntries, ErrFull)
	}
	m, id, err := resolveInner(a.spec.InnerMap, a.refs.ncpu, value)
	if err != nil {
		return err
	}
	if err := a.refs.hold(m); err != nil {
		return err
	}
	a.mu.Lock()
	old := atomic.SwapUint64(a.slot(i), m.Handle())
	a.ids[i] = id
	a.mu.Unlock()
	if old != 0 {
		a.refs.release(old)
	}
	return nil
}

func (a *arrayOfMaps) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in an array_of_maps: %w", ErrNotSupported)
}

func (a *arrayOfMaps) NextKey(key, next []byte) error {
	return arrayNextKey(a.spec.MaxEntries, key, next)
}

func (a *arrayOfMaps) free() error {
	a.refs.clear()
	return a.mem.Free()
}

// hashOfMaps is BPF_MAP_TYPE_HASH_OF_MAPS: a hash map whose 16-byte values
// hold the inner map's handle (first, for inlined lookups) and id.
type hashOfMaps struct {
	*hashMap
	outer Spec
	refs  innerRefs
}

// hashOfMapsValue is the size of the values the table stores.
const hashOfMapsValue = 16

func newHashOfMaps(spec Spec, opts Options) (Map, error) {
	inner := Spec{Name: spec.Name, Type: Hash, KeySize: spec.KeySize, ValueSize: hashOfMapsValue, MaxEntries: spec.MaxEntries, Flags: spec.Flags}
	hm, err := newHashMap(inner, opts, false)
	if err != nil {
		return nil, err
	}
	h := &hashOfMaps{hashMap: hm, outer: spec}
	h.refs.ncpu = opts.NumCPU
	hm.unlinked = func(e uint64) { h.refs.release(load(e + hm.valOff)) }
	if err := hm.header.init(h); err != nil {
		hm.free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	hm.fillHeader()
	return h, nil
}

func (h *hashOfMaps) Spec() Spec { return h.outer }

// Memory is empty: programs get inner map handles, not pointers into the
// outer map.
func (h *hashOfMaps) Memory() []vm.Region { return nil }

// Lookup returns the inner map's handle as a pointer, or nil.
func (h *hashOfMaps) Lookup(key unsafe.Pointer, cpu int) unsafe.Pointer {
	e := h.lookup(h.progKey(key))
	if e == 0 {
		return nil
	}
	return vm.Ptr(load(e + h.valOff))
}

func (h *hashOfMaps) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of a hash_of_maps from a program: %w", ErrNotSupported)
}

// LookupBytes writes the inner map's id.
func (h *hashOfMaps) LookupBytes(key, value []byte) error {
	if len(value) != 4 {
		return fmt.Errorf("value of %d bytes, want 4: %w", len(value), ErrInvalid)
	}
	var v [hashOfMapsValue]byte
	if err := h.hashMap.LookupBytes(key, v[:]); err != nil {
		return err
	}
	copy(value, v[8:12])
	return nil
}

// UpdateBytes stores the inner map whose id is value, with the flags of hash
// maps.
func (h *hashOfMaps) UpdateBytes(key, value []byte, flags uint64) error {
	if err := h.checkKey(key); err != nil {
		return err
	}
	if err := checkFlags(flags, nil); err != nil {
		return err
	}
	m, id, err := resolveInner(h.outer.InnerMap, h.refs.ncpu, value)
	if err != nil {
		return err
	}
	var v [hashOfMapsValue]byte
	binary.NativeEndian.PutUint64(v[:], m.Handle())
	binary.NativeEndian.PutUint32(v[8:], id)
	if err := h.refs.hold(m); err != nil {
		return err
	}
	if err := h.update(key, valueSrc{b: v[:]}, flags, true); err != nil {
		h.refs.release(m.Handle())
		return err
	}
	return nil
}

func (h *hashOfMaps) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a hash_of_maps: %w", ErrNotSupported)
}

func (h *hashOfMaps) free() error {
	err := h.hashMap.free()
	h.refs.clear()
	return err
}
