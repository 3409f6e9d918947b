package maps

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// Header layout: the off-heap block a handle points at.
const (
	hdrRef    = 0  // *ref: the Go side of the map
	hdrCookie = 8  // handle ^ cookieMagic, to reject forged handles cheaply
	hdrID     = 16 // uint32 map id
	// HeaderFields is where type-specific fields start; native code reads
	// them to inline lookups (e.g. an array's value base and element size).
	HeaderFields = 24
	// The kernel's struct bpf_map fields that programs may read through a
	// map pointer are mirrored from kernelFieldsStart (see KernelField).
	kernelFieldsStart = 64
	headerSize        = kernelFieldsStart + 32
)

// KernelField is a field of the kernel's struct bpf_map that a map's header
// mirrors at the field's offset in Linux 6.18 on x86-64 (from its vmlinux
// BTF), for programs that read it through a map pointer, as the kernel
// allows with BTF (check_ptr_to_map_access). The other fields are the
// kernel's internals; bpfvm has nothing to put there.
type KernelField struct {
	Name      string
	Off, Size uint32
}

// KernelFieldAt returns the mirrored field holding byte off of struct
// bpf_map.
func KernelFieldAt(off uint32) (KernelField, bool) {
	for _, f := range [...]KernelField{
		{"map_type", 64, 4}, {"key_size", 68, 4}, {"value_size", 72, 4}, {"max_entries", 76, 4},
		{"map_extra", 80, 8}, {"map_flags", 88, 4}, {"id", 92, 4},
	} {
		if off >= f.Off && off < f.Off+f.Size {
			return f, true
		}
	}
	return KernelField{}, false
}

// setKernelFields writes the mirrored struct bpf_map fields of a map with
// spec s and id into the header at addr.
func setKernelFields(addr uint64, s Spec, id uint32) {
	flags := s.Flags
	if s.Type.ProgReadOnly() {
		flags |= FlagRdonlyProg // the kernel sets it on devmaps
	}
	for off, v := range map[uint64]uint32{64: uint32(s.Type), 68: s.KeySize, 72: s.ValueSize, 76: s.MaxEntries, 88: flags, 92: id} {
		*(*uint32)(vm.Ptr(addr + off)) = v
	}
	*(*uint64)(vm.Ptr(addr + 80)) = s.MapExtra
}

// KernelFieldsRegion is the part of m's header holding the mirrored kernel
// fields, which programs may read.
func KernelFieldsRegion(m Map) vm.Region {
	h := m.Handle()
	return vm.Region{Start: h + kernelFieldsStart, End: h + headerSize}
}

const cookieMagic = 0x6270_6676_6d5f_6d61 // "bpfvm_ma"

// ref is the Go object a header points to. The map keeps it alive.
type ref struct{ m Map }

// header is embedded in every map: its handle, id and reference count.
//
// A map's memory lives until its last reference goes (see Acquire): the
// creator's (Close), one per program that references the map, one per slot
// of a map of maps holding it, one per Go-side operation in progress. Then
// the map leaves the live-map table, and its memory is freed once no run
// that could have found it is still inside (Defer). Runs themselves take no
// references: the epoch domains they enter protect what they hold.
type header struct {
	mem    *vm.Mem
	addr   uint64 // the handle; kept after the header is freed
	r      *ref
	id     uint32
	refs   atomic.Int64
	closed atomic.Bool // the creator's reference is gone
	// Go-side writes hold writes shared for their duration; Freeze takes
	// it exclusively without waiting, so that it fails (EBUSY) while a
	// write is in flight and no write lands once it has succeeded: the
	// kernel's freeze_mutex and write-active count.
	writes sync.RWMutex
	frozen atomic.Bool
	// mappings counts the writable direct mappings of the values
	// (MapWritable), the kernel's writable mmaps: Freeze fails while any
	// exists.
	mappings atomic.Int64
}

// The live-map table is the one piece of process-wide state in bpfvm, the
// counterpart of the kernel's map IDR: ids name maps across collections (the
// values of maps of maps, as file descriptors do in the kernel), and checked
// mode uses it to reject forged handles.
var (
	liveMaps sync.Map // uint64 handle -> Map
	mapIDs   sync.Map // uint32 id -> Map
	lastID   atomic.Uint32
)

// initHeader allocates the header of m and registers m.
func (h *header) init(m Map) error {
	mem, err := vm.Alloc(headerSize)
	if err != nil {
		return err
	}
	h.mem, h.r, h.id = mem, &ref{m: m}, lastID.Add(1)
	addr := mem.Addr()
	h.addr = addr
	h.refs.Store(1)
	*(*unsafe.Pointer)(vm.Ptr(addr + hdrRef)) = unsafe.Pointer(h.r)
	*(*uint64)(vm.Ptr(addr + hdrCookie)) = addr ^ cookieMagic
	*(*uint32)(vm.Ptr(addr + hdrID)) = h.id
	setKernelFields(addr, m.Spec(), h.id)
	liveMaps.Store(addr, m)
	mapIDs.Store(h.id, m)
	return nil
}

// Handle returns the map's handle.
func (h *header) Handle() uint64 { return h.addr }

// ID returns the map's id.
func (h *header) ID() uint32 { return h.id }

// field returns a pointer to a type-specific header field at off.
func (h *header) field(off uintptr) unsafe.Pointer {
	return vm.Ptr(h.addr + HeaderFields + uint64(off))
}

// Acquire takes a reference to the map, keeping its memory alive until the
// matching Release. It fails once the last reference is gone: the map is
// being freed and must not be touched.
func (h *header) Acquire() bool {
	for {
		n := h.refs.Load()
		if n <= 0 {
			return false
		}
		if h.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// rebind makes inner's handle and id name outer, a map wrapping it, so
// that helpers resolving the handle reach the wrapper's methods.
// newBacked creates the map a wrapping type keeps its elements in, from
// backing, and makes the wrapper wrap returns take over its handle.
func newBacked(backing Spec, opts Options, wrap func(Map) Map) (Map, error) {
	m, err := New(backing, opts)
	if err != nil {
		return nil, err
	}
	w := wrap(m)
	rebind(m, w)
	return w, nil
}

func rebind(inner, outer Map) {
	h := inner.Handle()
	(*ref)(*(*unsafe.Pointer)(vm.Ptr(h + hdrRef))).m = outer
	setKernelFields(h, outer.Spec(), IDOf(inner))
	liveMaps.Store(h, outer)
	mapIDs.Store(IDOf(inner), outer)
}

// Release drops a reference taken by Acquire (or the creator's, through
// Close). The last one unregisters the map and frees its memory once no
// run can still use it.
func (h *header) Release() {
	n := h.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		return // released more often than acquired: already freed
	}
	// Two grace periods, as nothing may find the map once it is freed. Go
	// code can no longer store it in a map of maps (nor Acquire it). Runs
	// inside now may still hold its handle from an outer map, and in
	// checked mode turn it back into the map (FromHandle): the handle
	// stays valid until they have left. Then it leaves the live-map table,
	// and once the runs that might have looked it up there have left too,
	// the memory goes.
	mapIDs.Delete(h.id)
	m := h.r.m
	Defer(func() {
		liveMaps.Delete(h.addr)
		Defer(func() {
			_ = m.free()
			_ = h.mem.Free()
		})
	})
}

// Close drops the creator's reference; the map lives on while programs,
// maps of maps, readers or Go-side operations still hold it. Closing twice
// does nothing.
func (h *header) Close() error {
	if !h.closed.Swap(true) {
		h.Release()
	}
	return nil
}

// Closed reports whether Close has been called.
func (h *header) Closed() bool { return h.closed.Load() }

// Freeze makes the map read-only to Go code for good, as BPF_MAP_FREEZE:
// writes started later fail with ErrPermission. Freezing a frozen map fails
// with ErrPermission, as in the kernel (a frozen map is not writable, which
// freezing needs), or ErrBusy when another Freeze got there first; a
// Go-side write in flight, or a writable mapping (MapWritable), makes it
// fail with ErrBusy. Programs may still
// write unless the map is read-only to them (BPF_F_RDONLY_PROG).
func (h *header) Freeze() error {
	if h.frozen.Load() {
		return fmt.Errorf("freeze: map is frozen: %w", ErrPermission)
	}
	// TryLock never waits, nor makes BeginWrite wait for it to be tried:
	// a write nested in another (a batch's elements) cannot deadlock.
	if !h.writes.TryLock() {
		return fmt.Errorf("freeze: a write is in progress: %w", ErrBusy)
	}
	defer h.writes.Unlock()
	if h.frozen.Load() {
		return fmt.Errorf("freeze: map is frozen: %w", ErrBusy)
	}
	if h.mappings.Load() > 0 {
		return fmt.Errorf("freeze: a writable mapping exists: %w", ErrBusy)
	}
	h.frozen.Store(true)
	return nil
}

// MapWritable counts a writable direct mapping of the map's values, which
// UnmapWritable ends: as the kernel's writable mmap, it fails with
// ErrPermission on a frozen map, and Freeze fails with ErrBusy while one
// exists.
func (h *header) MapWritable() error {
	h.writes.RLock()
	defer h.writes.RUnlock()
	if h.frozen.Load() {
		return fmt.Errorf("writable mapping: map is frozen: %w", ErrPermission)
	}
	h.mappings.Add(1)
	return nil
}

// UnmapWritable ends a mapping counted by MapWritable.
func (h *header) UnmapWritable() { h.mappings.Add(-1) }

// Frozen reports whether Freeze has succeeded.
func (h *header) Frozen() bool { return h.frozen.Load() }

// BeginWrite starts a Go-side write, which must call EndWrite when done:
// it fails with ErrPermission once the map is frozen, and while it is in
// progress Freeze fails.
func (h *header) BeginWrite() error {
	h.writes.RLock()
	if h.frozen.Load() {
		h.writes.RUnlock()
		return fmt.Errorf("map is frozen: %w", ErrPermission)
	}
	return nil
}

// EndWrite ends a write started by BeginWrite.
func (h *header) EndWrite() { h.writes.RUnlock() }

// FromHandle returns the map a handle names. With checked set the handle
// may be any value (it comes from an unverified program) and unknown values
// give an error; otherwise it must be a live handle, as the verifier proves.
func FromHandle(handle uint64, checked bool) (Map, error) {
	if checked {
		m, ok := liveMaps.Load(handle)
		if !ok {
			return nil, fmt.Errorf("%#x is not a map: %w", handle, ErrInvalid)
		}
		return m.(Map), nil
	}
	r := (*ref)(*(*unsafe.Pointer)(vm.Ptr(handle + hdrRef)))
	return r.m, nil
}

// ByID returns the live map with the given id.
func ByID(id uint32) (Map, bool) {
	m, ok := mapIDs.Load(id)
	if !ok {
		return nil, false
	}
	return m.(Map), true
}

// IDOf returns a map's id, as the kernel's map ids and bpfvm's maps-of-maps
// values use it.
func IDOf(m Map) uint32 { return m.ID() }
