package maps

import (
	"fmt"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// Array maps.
const (
	Array       Type = 2
	PerCPUArray Type = 6
)

// The array types: BPF_MAP_TYPE_ARRAY and BPF_MAP_TYPE_PERCPU_ARRAY.
var (
	arrayInfo = typeInfo{
		maps: arrays{}, helpers: walkHelpers, kernelStruct: "bpf_array",
		indexed: true, directValue: true,
	}
	perCPUArrayInfo = typeInfo{
		maps: arrays{}, helpers: perCPUHelpers, kernelStruct: "bpf_array",
		indexed: true, perCPU: true,
	}
)

// arrays creates and validates array maps.
type arrays struct{}

func (arrays) create(s Spec, o Options) (Map, error) { return newArray(s, o) }
func (arrays) check(s Spec) error                    { return validateArray(s) }

// array is BPF_MAP_TYPE_ARRAY and BPF_MAP_TYPE_PERCPU_ARRAY: max_entries
// elements in one off-heap block, each value rounded up to 8 bytes as in the
// kernel. A per-CPU array has an area per CPU, each holding that CPU's
// values of all elements, as the kernel's per-CPU allocations are laid out:
// runs on different CPUs never write a cache line in common (cpuArea).
//
// Header fields (for inlined lookups): value base, element stride (per-CPU:
// from one CPU's area to the next), max entries, value size.
type array struct {
	header
	spec  Spec
	ncpu  int
	mem   *vm.Mem
	base  uint64
	vsize uint64 // value size rounded up to 8: the element stride
	// stride is the bytes from one CPU's area to the next (per-CPU), the
	// element stride otherwise.
	stride uint64
	// fields are the values' special fields, which copies skip.
	fields []Field
}

// Header field offsets of arrays, relative to HeaderFields.
const (
	ArrayFieldBase       = 0
	ArrayFieldStride     = 8
	ArrayFieldMaxEntries = 16
	ArrayFieldValueSize  = 20
)

// maxValueSize is the kernel's cap on value sizes (KMALLOC_MAX_SIZE-like).
const maxValueSize = 1 << 29

func newArray(spec Spec, opts Options) (Map, error) {
	if spec.KeySize != 4 {
		return nil, fmt.Errorf("map %s: array key size %d, want 4: %w", spec.Name, spec.KeySize, ErrInvalid)
	}
	if spec.ValueSize == 0 || spec.ValueSize > maxValueSize {
		return nil, fmt.Errorf("map %s: value size %d: %w", spec.Name, spec.ValueSize, ErrInvalid)
	}
	a := &array{spec: spec, ncpu: 1, vsize: (uint64(spec.ValueSize) + 7) &^ 7, fields: specFields(spec)}
	if spec.Type.PerCPU() {
		a.ncpu = opts.NumCPU
	}
	a.stride = a.vsize
	size := a.vsize * uint64(spec.MaxEntries)
	if spec.Type.PerCPU() {
		a.stride = cpuArea(size)
		size = a.stride * uint64(a.ncpu)
	}
	if size > 1<<32 {
		return nil, fmt.Errorf("map %s: %d bytes of values: %w", spec.Name, size, ErrFull)
	}
	mem, err := vm.Alloc(int(size))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	a.mem, a.base = mem, mem.Addr()
	if err := a.header.init(a); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	*(*uint64)(a.field(ArrayFieldBase)) = a.base
	*(*uint64)(a.field(ArrayFieldStride)) = a.stride
	*(*uint32)(a.field(ArrayFieldMaxEntries)) = spec.MaxEntries
	*(*uint32)(a.field(ArrayFieldValueSize)) = uint32(a.vsize)
	return a, nil
}

func (a *array) Spec() Spec { return a.spec }

func (a *array) Memory() []vm.Region {
	end := a.base + a.vsize*uint64(a.spec.MaxEntries)
	if a.spec.Type.PerCPU() {
		end = a.base + a.stride*uint64(a.ncpu)
	}
	return []vm.Region{{Start: a.base, End: end, Writable: a.spec.Flags&FlagRdonlyProg == 0}}
}

// elem returns the address of element i's value for cpu, or 0. Maps that
// are not per-CPU have one value whatever the runner.
func (a *array) elem(i uint32, cpu int) uint64 {
	if i >= a.spec.MaxEntries {
		return 0
	}
	if a.ncpu == 1 {
		return a.base + uint64(i)*a.vsize
	}
	return a.base + uint64(cpu)*a.stride + uint64(i)*a.vsize
}

func (a *array) Lookup(key unsafe.Pointer, cpu int) unsafe.Pointer {
	addr := a.elem(*(*uint32)(key), cpu)
	if addr == 0 {
		return nil
	}
	return vm.Ptr(addr)
}

// checkFlags rejects unknown flags and, as the kernel does, BPF_F_LOCK for
// values without a bpf_spin_lock.
func checkFlags(flags uint64, fields []Field) error {
	if flags&^UpdateLock > UpdateExist || flags&UpdateLock != 0 && !hasSpinLock(fields) {
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	}
	return nil
}

// update validates an update of element i, as the kernel's array does: every
// element exists, so NOEXIST always fails.
func (a *array) update(i uint32, flags uint64) error {
	if err := checkFlags(flags, a.fields); err != nil {
		return err
	}
	if i >= a.spec.MaxEntries {
		return ErrFull
	}
	if flags&^UpdateLock == UpdateNoExist {
		return ErrKeyExist
	}
	return nil
}

func (a *array) Update(key, value unsafe.Pointer, flags uint64, cpu int) error {
	i := *(*uint32)(key)
	if err := a.update(i, flags); err != nil {
		return err
	}
	a.store(a.elem(i, cpu), unsafe.Slice((*byte)(value), a.spec.ValueSize), flags)
	return nil
}

// store writes a value in place, holding its spin lock with BPF_F_LOCK.
func (a *array) store(dst uint64, src []byte, flags uint64) {
	if flags&UpdateLock != 0 {
		storeLocked(dst, src, a.fields)
	} else {
		storeValue(dst, src, a.fields)
	}
	// The old value's references go (array_map_update_elem's
	// bpf_obj_free_fields).
	if hasFreeFields(a.fields) {
		freeFields(dst, a.fields)
	}
}

func (a *array) Delete(unsafe.Pointer) error { return ErrInvalid }

func (a *array) LookupBytes(key, value []byte) error {
	i, err := a.key(key)
	if err != nil {
		return err
	}
	if i >= a.spec.MaxEntries {
		return ErrKeyNotExist
	}
	if len(value) != ValueSizeBytes(a.spec, a.ncpu) {
		return fmt.Errorf("value of %d bytes, want %d: %w", len(value), ValueSizeBytes(a.spec, a.ncpu), ErrInvalid)
	}
	if a.ncpu == 1 {
		loadValues(value, a.elem(i, 0), a.vsize, a.fields)
		return nil
	}
	for cpu := range a.ncpu {
		loadValues(value[uint64(cpu)*a.vsize:][:a.vsize], a.elem(i, cpu), a.vsize, a.fields)
	}
	return nil
}

func (a *array) UpdateBytes(key, value []byte, flags uint64) error {
	i, err := a.key(key)
	if err != nil {
		return err
	}
	if err := a.update(i, flags); err != nil {
		return err
	}
	if len(value) != ValueSizeBytes(a.spec, a.ncpu) {
		return fmt.Errorf("value of %d bytes, want %d: %w", len(value), ValueSizeBytes(a.spec, a.ncpu), ErrInvalid)
	}
	if !a.spec.Type.PerCPU() {
		a.store(a.elem(i, 0), value, flags)
		return nil
	}
	for cpu := range a.ncpu {
		storeValue(a.elem(i, cpu), value[uint64(cpu)*a.vsize:][:a.spec.ValueSize], a.fields)
		if hasFreeFields(a.fields) {
			freeFields(a.elem(i, cpu), a.fields)
		}
	}
	return nil
}

func (a *array) LookupAndDelete(key, value []byte) error { return ErrNotSupported }

func (a *array) NextKey(key, next []byte) error {
	if len(next) != 4 {
		return fmt.Errorf("key of %d bytes, want 4: %w", len(next), ErrInvalid)
	}
	var i uint32
	if key != nil {
		k, err := a.key(key)
		if err != nil {
			return err
		}
		if k < a.spec.MaxEntries {
			i = k + 1
		}
	}
	if i >= a.spec.MaxEntries {
		return ErrKeyNotExist
	}
	*(*uint32)(unsafe.Pointer(&next[0])) = i
	return nil
}

func (a *array) key(key []byte) (uint32, error) {
	if len(key) != 4 {
		return 0, fmt.Errorf("key of %d bytes, want 4: %w", len(key), ErrInvalid)
	}
	return *(*uint32)(unsafe.Pointer(&key[0])), nil
}

func (a *array) free() error {
	if hasFreeFields(a.fields) {
		for i := range a.spec.MaxEntries {
			for cpu := range a.ncpu {
				freeFields(a.elem(i, cpu), a.fields)
			}
		}
	}
	return a.mem.Free()
}

// cpuArea is the size of one CPU's area of a per-CPU map holding size
// bytes of values: rounded up to two 64-byte cache lines, so that no line
// (nor a pair that x86's adjacent-line prefetcher pulls together) holds two
// CPUs' values.
func cpuArea(size uint64) uint64 { return (size + 127) &^ 127 }

// bytesAt views n bytes of off-heap memory at addr.
func bytesAt(addr, n uint64) []byte {
	return unsafe.Slice((*byte)(vm.Ptr(addr)), n)
}

// copyMem copies n bytes from src to the off-heap address dst.
func copyMem(dst uint64, src unsafe.Pointer, n uint32) {
	copy(bytesAt(dst, uint64(n)), unsafe.Slice((*byte)(src), n))
}
