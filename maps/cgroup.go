package maps

import (
	"encoding/binary"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/bpfvm/bpfvm/internal/errs"
)

// Cgroup map types: the cgroups bpf_skb_under_cgroup and
// bpf_current_task_under_cgroup test against, and the storage
// bpf_get_local_storage gives a cgroup program.
const (
	CgroupArray         Type = 8
	CgroupStorage       Type = 19
	PerCPUCgroupStorage Type = 21
)

// The cgroup types. A cgroup array takes only the two under_cgroup
// helpers; a cgroup storage only bpf_get_local_storage, and is no inner
// map (EOPNOTSUPP).
var (
	cgroupArrayInfo = typeInfo{
		maps: cgroupMaps{}, kernelStruct: "bpf_array", noBatch: true,
		helpers: underCgroupHelpers, onlyHelpers: true,
	}
	cgroupStorageInfo = typeInfo{
		maps: cgroupMaps{}, kernelStruct: "bpf_cgroup_storage_map", noBatch: true,
		helpers: localStorageHelper, onlyHelpers: true, notInner: true, noEntries: true,
	}
	perCPUCgroupStorageInfo = typeInfo{
		maps: cgroupMaps{}, kernelStruct: "bpf_cgroup_storage_map", noBatch: true,
		helpers: localStorageHelper, onlyHelpers: true, notInner: true, noEntries: true, perCPU: true,
	}
)

var (
	underCgroupHelpers = []string{"bpf_skb_under_cgroup", "bpf_current_task_under_cgroup"}
	localStorageHelper = []string{"bpf_get_local_storage"}
)

// ErrBadFD is EBADF: a Go-side value or key the kernel takes as a file
// descriptor that names nothing bpfvm has (a cgroup id of 0 in a cgroup
// array; any key of a socket storage, which bpfvm addresses by socket
// cookie instead, see SocketStorage).
var ErrBadFD error = errs.New("bad file descriptor", syscall.EBADF)

// cgroupMaps creates and validates the cgroup types.
type cgroupMaps struct{}

func (cgroupMaps) create(s Spec, o Options) (Map, error) {
	if s.Type == CgroupArray {
		return newCgroupArray(s, o)
	}
	return newCgroupStorage(s, o)
}

func (cgroupMaps) check(s Spec) error {
	if s.Type == CgroupArray {
		return validateArray(s)
	}
	return validateCgroupStorage(s)
}

// Sizes of cgroup storage keys: struct bpf_cgroup_storage_key (a cgroup
// id and an attach type, padded to 16 bytes), or the cgroup id alone.
const (
	CgroupStorageKeySize   = 16
	CgroupStorageKeyIDOnly = 8
)

// localStorageMaxValue is BPF_LOCAL_STORAGE_MAX_VALUE_SIZE on x86-64:
// U16_MAX less sizeof(struct bpf_local_storage_elem).
const localStorageMaxValue = 1<<16 - 1 - localStorageElemSize

// localStorageElemSize is sizeof(struct bpf_local_storage_elem) on x86-64.
const localStorageElemSize = 128

// validateCgroupStorage checks a cgroup storage spec as the kernel's
// cgroup_storage_map_alloc, in its order.
func validateCgroupStorage(s Spec) error {
	if s.KeySize != CgroupStorageKeySize && s.KeySize != CgroupStorageKeyIDOnly {
		return fmt.Errorf("%s key size %d, want %d or %d: %w", s.Type, s.KeySize, CgroupStorageKeySize, CgroupStorageKeyIDOnly, ErrInvalid)
	}
	if s.ValueSize == 0 {
		return fmt.Errorf("%s value size 0: %w", s.Type, ErrInvalid)
	}
	limit := uint32(localStorageMaxValue)
	if s.Type == PerCPUCgroupStorage {
		limit = min(limit, pcpuMinUnitSize)
	}
	if s.ValueSize > limit {
		return fmt.Errorf("%s value size %d over %d: %w", s.Type, s.ValueSize, limit, ErrFull)
	}
	if err := checkFlagSet(s, FlagNumaNode|flagsAccess); err != nil {
		return err
	}
	if s.MaxEntries != 0 {
		return fmt.Errorf("%s max_entries %d, want 0: %w", s.Type, s.MaxEntries, ErrInvalid)
	}
	return nil
}

// cgroupStorageMax bounds the storages of one cgroup storage map (one per
// cgroup and attach type its programs run in), which the kernel does not
// bound.
const cgroupStorageMax = 256

// CgroupStorageMap is a cgroup storage (BPF_MAP_TYPE_CGROUP_STORAGE,
// PERCPU_CGROUP_STORAGE): one value, per CPU for the per-CPU type, for
// each cgroup and attach type a program using the map runs attached to.
// The kernel makes a storage when such a program is attached to a cgroup;
// bpfvm, which attaches nothing, makes it on the first
// bpf_get_local_storage of a run attached there (Storage), zeroed, and
// keeps it as long as the map. Go code looks storages up and updates them
// by key (struct bpf_cgroup_storage_key, or the cgroup id alone for a map
// of 8-byte keys); it cannot create or delete them (ErrKeyNotExist,
// ErrInvalid, as the kernel).
type CgroupStorageMap struct {
	Map  // a hash of the storages by key
	spec Spec
	mu   sync.Mutex // Storage's creations
}

func newCgroupStorage(spec Spec, opts Options) (Map, error) {
	backing := Spec{Name: spec.Name, Type: Hash, KeySize: spec.KeySize, ValueSize: spec.ValueSize,
		MaxEntries: cgroupStorageMax, Flags: spec.Flags &^ FlagNumaNode}
	if spec.Type == PerCPUCgroupStorage {
		backing.Type = PerCPUHash
	}
	return newBacked(backing, opts, func(m Map) Map { return &CgroupStorageMap{Map: m, spec: spec} })
}

// Spec returns the spec the map was created with.
func (c *CgroupStorageMap) Spec() Spec { return c.spec }

// key copies a storage key, the padding of struct bpf_cgroup_storage_key
// cleared: the kernel compares only the id and the attach type.
func (c *CgroupStorageMap) key(b []byte) ([]byte, error) {
	if len(b) != int(c.spec.KeySize) {
		return nil, fmt.Errorf("key of %d bytes, want %d: %w", len(b), c.spec.KeySize, ErrInvalid)
	}
	k := append([]byte(nil), b...)
	if len(k) == CgroupStorageKeySize {
		clear(k[12:])
	}
	return k, nil
}

// Storage returns the run's storage of the cgroup with id cgroup for
// programs attached there with attach type attach (for cpu, per-CPU
// storages), making it, zeroed, on first use. nil only when the map holds
// as many storages as bpfvm allows.
func (c *CgroupStorageMap) Storage(cgroup uint64, attach uint32, cpu int) unsafe.Pointer {
	var k [CgroupStorageKeySize]byte
	binary.NativeEndian.PutUint64(k[:], cgroup)
	binary.NativeEndian.PutUint32(k[8:], attach)
	key := unsafe.Pointer(&k[0])
	if p := c.Map.Lookup(key, cpu); p != nil {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.Map.Lookup(key, cpu); p != nil {
		return p
	}
	// The programs' update, which never waits for memory (a run waiting
	// for reclamation could wait for itself): a new element's other
	// CPUs' values are zeroed.
	zero := make([]byte, c.spec.ValueSize)
	if err := c.Map.Update(key, unsafe.Pointer(&zero[0]), UpdateNoExist, cpu); err != nil {
		return nil
	}
	return c.Map.Lookup(key, cpu)
}

// Lookup finds nothing for programs: they reach storages through
// bpf_get_local_storage (Storage) only.
func (c *CgroupStorageMap) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update is not for programs (the verifier allows only
// bpf_get_local_storage).
func (c *CgroupStorageMap) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("%s update from a program: %w", c.spec.Type, ErrInvalid)
}

// Delete is EINVAL: storages go with their cgroup attachment.
func (c *CgroupStorageMap) Delete(unsafe.Pointer) error {
	return fmt.Errorf("%s delete: %w", c.spec.Type, ErrInvalid)
}

// LookupBytes copies a storage's value (per-CPU: every CPU's);
// ErrKeyNotExist when no program runs attached there.
func (c *CgroupStorageMap) LookupBytes(key, value []byte) error {
	k, err := c.key(key)
	if err != nil {
		return err
	}
	return c.Map.LookupBytes(k, value)
}

// UpdateBytes replaces a storage's value: flags BPF_ANY or BPF_EXIST
// (BPF_NOEXIST, and BPF_F_LOCK without a bpf_spin_lock, are EINVAL), and
// the storage must exist (ErrKeyNotExist).
func (c *CgroupStorageMap) UpdateBytes(key, value []byte, flags uint64) error {
	if flags != UpdateAny && flags != UpdateExist {
		return fmt.Errorf("%s update flags %#x: %w", c.spec.Type, flags, ErrInvalid)
	}
	k, err := c.key(key)
	if err != nil {
		return err
	}
	return c.Map.UpdateBytes(k, value, UpdateExist)
}

// LookupAndDelete is not supported, as in the kernel.
func (c *CgroupStorageMap) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a %s: %w", c.spec.Type, ErrNotSupported)
}

// NextKey walks the storages; a key without a storage is ErrKeyNotExist
// (the kernel does not restart the walk).
func (c *CgroupStorageMap) NextKey(key, next []byte) error {
	if key != nil {
		k, err := c.key(key)
		if err != nil {
			return err
		}
		if err := c.Map.LookupBytes(k, make([]byte, ValueSizeBytes(c.spec, numCPU(c.Map)))); err != nil {
			return err
		}
		key = k
	}
	return c.Map.NextKey(key, next)
}

// CgroupArrayMap is a cgroup array (BPF_MAP_TYPE_CGROUP_ARRAY): slots of
// cgroups that bpf_skb_under_cgroup and bpf_current_task_under_cgroup
// test against. The kernel's Go-side values are cgroup file descriptors;
// bpfvm, which has no cgroups of its own, stores the cgroup's id in the
// host's hierarchy (runner.Net.Cgroups), which must not be 0 (ErrBadFD, as
// for a descriptor that is no cgroup). Go code cannot read the slots back
// (EOPNOTSUPP, as the kernel).
type CgroupArrayMap struct {
	*ProgramArray
	spec Spec
}

func newCgroupArray(spec Spec, opts Options) (Map, error) {
	opts.Programs = nil
	m, err := newProgArray(spec, opts)
	if err != nil {
		return nil, err
	}
	c := &CgroupArrayMap{ProgramArray: m.(*ProgramArray), spec: spec}
	rebind(m, c)
	return c, nil
}

// Spec returns the spec the array was created with.
func (c *CgroupArrayMap) Spec() Spec { return c.spec }

// Cgroup returns the id of the cgroup at index, and whether the slot holds
// one.
func (c *CgroupArrayMap) Cgroup(index uint32) (uint32, bool) { return c.Get(index) }

// LookupBytes is not supported: the kernel has no Go-side lookup of
// cgroup arrays.
func (c *CgroupArrayMap) LookupBytes(key, value []byte) error {
	return fmt.Errorf("lookup in a cgroup_array: %w", ErrNotSupported)
}

// UpdateBytes stores a cgroup id (only UpdateAny, as for every fd array).
// The flags and the index are checked before the cgroup, as the kernel's.
func (c *CgroupArrayMap) UpdateBytes(key, value []byte, flags uint64) error {
	i, err := index4(key)
	if err != nil {
		return err
	}
	switch {
	case flags != UpdateAny:
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	case i >= c.spec.MaxEntries:
		return fmt.Errorf("index %d of %d: %w", i, c.spec.MaxEntries, ErrFull)
	case len(value) == 4 && binary.NativeEndian.Uint32(value) == 0:
		return fmt.Errorf("cgroup id 0: %w", ErrBadFD)
	}
	return c.ProgramArray.UpdateBytes(key, value, flags)
}
