package maps

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// Hash maps (the LRU ones evict, lru.go).
const (
	Hash          Type = 1
	PerCPUHash    Type = 5
	LRUHash       Type = 9
	LRUPerCPUHash Type = 10
)

// The hash types: BPF_MAP_TYPE_HASH and LRU_HASH, PERCPU_HASH and
// LRU_PERCPU_HASH.
var (
	hashInfo       = typeInfo{maps: hashes{}, helpers: walkHelpers, kernelStruct: "bpf_htab"}
	perCPUHashInfo = typeInfo{maps: hashes{}, helpers: perCPUHelpers, kernelStruct: "bpf_htab", perCPU: true}
)

// hashes creates and validates hash maps.
type hashes struct{}

func (hashes) create(s Spec, o Options) (Map, error) { return newHash(s, o) }
func (hashes) check(s Spec) error                    { return validateHash(s) }

// hashMap is BPF_MAP_TYPE_HASH and PERCPU_HASH, and with lru set LRU_HASH
// and LRU_PERCPU_HASH (eviction is in lru.go).
//
// Buckets are a power of two (at least max_entries) of 8-byte heads, each
// the address of the first element of a chain or 0. Elements come from a
// preallocated off-heap pool; an element is
//
//	next  uint64  address of the next element in the chain, 0 at the end
//	hash  uint32  hash of the key
//	ref   uint32  LRU maps: set by lookups from programs
//	key   KeySize bytes, padded to 8
//	value uint64  address of the element's value slot (see below)
//
// Values live in a block apart from the elements, one slot per element
// (slot i of the value block belongs to element i of the pool, and is
// reused with it): ValueSize bytes padded to 8, per-CPU maps NumCPU of
// them. Only the value block is program memory (Memory), so a checked run
// of an unverified program that writes past its value cannot reach the
// links, keys or hashes the Go side and the lock-free lookups walk. Hash of
// maps, whose values programs never address, keeps them in the element
// (apart unset).
//
// Programs look keys up without a lock: atomic loads of the head and next
// links, then a compare of hash and key. Writers hold the bucket's lock.
// A published element never changes key or (except per-CPU updates from
// programs, which the kernel also does in place) value: an update links a
// new element in place of the old one, so readers see the old value or the
// new one, never a mix. Unlinked elements are retired and reused only once
// the Domain says no run can still see them (see pool).
//
// Elements are always preallocated; FlagNoPrealloc is accepted and changes
// nothing. The pool keeps some elements beyond max_entries so that a key
// can be replaced while its old element awaits reclamation (the kernel's
// per-CPU extra elements serve the same purpose).
type hashMap struct {
	header
	spec    Spec
	fields  []Field // the values' special fields, which copies skip
	ncpu    int     // values per element
	lru     bool
	keySize uint64
	valOff  uint64 // offset of the value (apart: of its address) in an element
	vsize   uint64 // value size rounded up to 8
	apart   bool   // values in the value block, not in the elements
	vmem    *vm.Mem
	// vbase is the value block, when apart: element i's value is at
	// vbase + i*vsize, and per-CPU values have an area per CPU, cpuStride
	// bytes apart, holding that CPU's values of all elements (as the
	// kernel's per-CPU allocations: runs on different CPUs write no
	// cache line in common).
	vbase     uint64
	cpuStride uint64
	seed      uint64
	mask      uint32
	max       int64

	bmem    *vm.Mem
	buckets uint64
	locks   []sync.Mutex // one per bucket
	count   atomic.Int64 // linked elements, plus insertions under way
	elems   pool
	clock   clock

	// unlinked, when set, hears of every element unlinked from the table
	// (replaced, deleted or evicted) before it is retired, under its bucket
	// lock: hash of maps uses it to drop its reference to the inner map.
	unlinked func(e uint64)
}

// Header field offsets of hash maps, relative to HeaderFields: what native
// code needs to inline a lookup.
const (
	HashFieldBuckets = 0  // uint64: address of the bucket heads
	HashFieldMask    = 8  // uint32: number of buckets - 1
	HashFieldKeySize = 12 // uint32
	// HashFieldHashInit is the hash function's initial state for this map's
	// keys, seed ^ KeySize*HashK1 (hashfunc.go): inlined lookups start from
	// it rather than recomputing it.
	HashFieldHashInit    = 16 // uint64
	HashFieldValueOffset = 24 // uint32: offset in an element of its value's address (hash of maps: of the value)
	HashFieldLRU         = 28 // uint32: 1 if lookups must set HashElemRef
	HashFieldCPUStride   = 32 // uint64: per-CPU maps: bytes from a CPU's value to the next CPU's
)

// Element layout of hash maps.
const (
	HashElemNext = 0  // uint64: next element in the bucket, 0 at the end
	HashElemHash = 8  // uint32: hash of the key
	HashElemRef  = 12 // uint32: LRU referenced mark, set to 1 by lookups
	HashElemKey  = 16 // the key, zero-padded to a multiple of 8 bytes
)

// hashReserve is how many elements beyond max_entries a hash map keeps for
// updates that replace an element while the old one awaits reclamation.
func hashReserve(maxEntries uint32, ncpu int) uint32 {
	return max(64, min(maxEntries, 4096)) + uint32(4*ncpu)
}

func newHash(spec Spec, opts Options) (Map, error) {
	m, err := newHashMap(spec, opts, true)
	if err != nil {
		return nil, err
	}
	if err := m.header.init(m); err != nil {
		m.free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	m.fillHeader()
	return m, nil
}

// newHashMap builds the table without registering it, for hash of maps to
// wrap; apart puts the values in a block of their own.
func newHashMap(spec Spec, opts Options, apart bool) (*hashMap, error) {
	m := &hashMap{
		spec:    spec,
		fields:  specFields(spec),
		ncpu:    1,
		lru:     spec.Type == LRUHash || spec.Type == LRUPerCPUHash,
		keySize: uint64(spec.KeySize),
		vsize:   (uint64(spec.ValueSize) + 7) &^ 7,
		apart:   apart,
	}
	if spec.Type.PerCPU() {
		m.ncpu = opts.NumCPU
	}
	if m.lru && spec.Flags&FlagNoCommonLRU != 0 {
		// The kernel's per-CPU LRU lists split max_entries evenly among
		// CPUs, rounding it up to a multiple of their number.
		n := uint32(opts.NumCPU)
		if r := (spec.MaxEntries + n - 1) / n * n; r >= spec.MaxEntries {
			m.spec.MaxEntries = r
		} else {
			m.spec.MaxEntries = spec.MaxEntries / n * n
		}
	}
	m.max = int64(m.spec.MaxEntries)
	m.valOff = HashElemKey + (m.keySize+7)&^7
	if m.ncpu > 1 && !apart {
		return nil, fmt.Errorf("map %s: per-CPU values in the elements: %w", spec.Name, ErrNotSupported)
	}
	elemSize := m.valOff + m.vsize
	if apart {
		elemSize = m.valOff + 8
	}

	nb := uint64(1)
	for nb < uint64(m.spec.MaxEntries) {
		nb <<= 1
	}
	m.mask = uint32(nb - 1)
	if spec.Flags&FlagZeroSeed == 0 {
		var b [8]byte
		rand.Read(b[:])
		m.seed = binary.LittleEndian.Uint64(b[:])
	}

	n := m.spec.MaxEntries + hashReserve(m.spec.MaxEntries, opts.NumCPU)
	if err := m.elems.init(elemSize, n, opts.Domain); err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	// Poisoning keeps the next link so a reader that (wrongly) still walks
	// a reused element does not crash before the test notices.
	m.elems.poisonFrom = HashElemKey
	bmem, err := vm.Alloc(int(nb * 8))
	if err != nil {
		m.elems.close()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	m.bmem, m.buckets = bmem, bmem.Addr()
	if apart {
		total := m.vsize * uint64(n)
		m.cpuStride = total
		if m.ncpu > 1 {
			m.cpuStride = cpuArea(total)
			total = m.cpuStride * uint64(m.ncpu)
		}
		var vmem *vm.Mem
		if total <= maxMapBytes {
			vmem, err = vm.Alloc(int(max(total, 8)))
		} else {
			err = fmt.Errorf("%d bytes of values: %w", total, ErrFull)
		}
		if err != nil {
			m.free()
			return nil, fmt.Errorf("map %s: %w", spec.Name, err)
		}
		m.vmem, m.vbase = vmem, vmem.Addr()
		m.elems.poisonHook = func(i uint32) {
			for cpu := range uint64(m.ncpu) {
				b := bytesAt(m.vbase+cpu*m.cpuStride+uint64(i)*m.vsize, m.vsize)
				for j := range b {
					b[j] = poisonByte
				}
			}
		}
	}
	m.locks = make([]sync.Mutex, nb)
	return m, nil
}

func (m *hashMap) fillHeader() {
	*(*uint64)(m.field(HashFieldBuckets)) = m.buckets
	*(*uint32)(m.field(HashFieldMask)) = m.mask
	*(*uint32)(m.field(HashFieldKeySize)) = uint32(m.keySize)
	*(*uint64)(m.field(HashFieldHashInit)) = m.seed ^ m.keySize*HashK1
	*(*uint32)(m.field(HashFieldValueOffset)) = uint32(m.valOff)
	if m.lru {
		*(*uint32)(m.field(HashFieldLRU)) = 1
	}
	*(*uint64)(m.field(HashFieldCPUStride)) = m.cpuStride
}

func (m *hashMap) Spec() Spec { return m.spec }

func (m *hashMap) Memory() []vm.Region {
	start, end := m.elems.region()
	if m.apart {
		start, end = m.vbase, m.vbase+m.vsize*uint64(m.elems.n)
		if m.ncpu > 1 {
			end = m.vbase + m.cpuStride*uint64(m.ncpu)
		}
	}
	return []vm.Region{{Start: start, End: end, Writable: m.spec.Flags&FlagRdonlyProg == 0}}
}

// load and store access the 64-bit links of the table.
func load(addr uint64) uint64     { return atomic.LoadUint64((*uint64)(vm.Ptr(addr))) }
func store(addr uint64, v uint64) { atomic.StoreUint64((*uint64)(vm.Ptr(addr)), v) }

func (m *hashMap) bucket(hash uint32) uint64 { return m.buckets + uint64(hash&m.mask)*8 }
func (m *hashMap) key(e uint64) []byte       { return bytesAt(e+HashElemKey, m.keySize) }

// value returns the address of element e's value (per-CPU: CPU 0's).
func (m *hashMap) value(e uint64) uint64 {
	if m.apart {
		return *(*uint64)(vm.Ptr(e + m.valOff))
	}
	return e + m.valOff
}

// find returns the element holding key in the chain starting at link (a
// bucket head) and the address of the link pointing at it, or 0s. Without
// the bucket lock it is the lock-free lookup.
func (m *hashMap) find(link uint64, hash uint32, key []byte) (prev, e uint64) {
	for e = load(link); e != 0; link, e = e, load(e+HashElemNext) {
		if *(*uint32)(vm.Ptr(e + HashElemHash)) == hash && bytes.Equal(m.key(e), key) {
			return link, e
		}
	}
	return 0, 0
}

// lookup is the lock-free lookup of programs.
func (m *hashMap) lookup(key []byte) uint64 {
	hash := HashKey(m.seed, key)
	_, e := m.find(m.bucket(hash), hash, key)
	if e != 0 && m.lru {
		// A plain check first keeps hot elements' lines shared.
		ref := (*uint32)(vm.Ptr(e + HashElemRef))
		if atomic.LoadUint32(ref) == 0 {
			atomic.StoreUint32(ref, 1)
		}
	}
	return e
}

// progKey views a key in program memory.
func (m *hashMap) progKey(key unsafe.Pointer) []byte {
	return unsafe.Slice((*byte)(key), m.keySize)
}

func (m *hashMap) Lookup(key unsafe.Pointer, cpu int) unsafe.Pointer {
	e := m.lookup(m.progKey(key))
	if e == 0 {
		return nil
	}
	if m.ncpu == 1 {
		return vm.Ptr(m.value(e))
	}
	return vm.Ptr(m.value(e) + uint64(cpu)*m.cpuStride)
}

// valueSrc is where an update's value comes from.
type valueSrc struct {
	prog unsafe.Pointer // program side: one value of ValueSize bytes
	cpu  int            // program side: whose value it is (per-CPU maps)
	b    []byte         // Go side: the whole value (per-CPU: every CPU's)
}

// fill writes the value of a new element.
func (m *hashMap) fill(e uint64, v valueSrc) {
	dst := m.value(e)
	switch {
	case v.prog == nil && m.ncpu == 1:
		copy(bytesAt(dst, uint64(len(v.b))), v.b)
	case v.prog == nil:
		for cpu := range uint64(m.ncpu) {
			copy(bytesAt(dst+cpu*m.cpuStride, m.vsize), v.b[cpu*m.vsize:])
		}
	case m.ncpu == 1:
		copyMem(dst, v.prog, m.spec.ValueSize)
	default:
		for cpu := range uint64(m.ncpu) {
			clear(bytesAt(dst+cpu*m.cpuStride, m.vsize))
		}
		copyMem(dst+uint64(v.cpu)*m.cpuStride, v.prog, m.spec.ValueSize)
	}
	// A new element's special fields are initialised, never copied in.
	if len(m.fields) > 0 {
		for cpu := range uint64(m.ncpu) {
			initFields(bytesAt(dst+cpu*m.cpuStride, uint64(m.spec.ValueSize)), m.fields)
		}
	}
}

// loadValues copies element e's value (per-CPU: every CPU's, one after
// the other) to dst, as Go code reads it.
func (m *hashMap) loadValues(dst []byte, e uint64) {
	if m.ncpu == 1 {
		loadValues(dst, m.value(e), m.vsize, m.fields)
		return
	}
	for cpu := range uint64(m.ncpu) {
		loadValues(dst[cpu*m.vsize:][:m.vsize], m.value(e)+cpu*m.cpuStride, m.vsize, m.fields)
	}
}

// putCPUValue writes a program's value for one CPU into an existing
// per-CPU element, but for its special fields (pcpu_copy_value).
func (m *hashMap) putCPUValue(e uint64, v valueSrc) {
	storeValue(m.value(e)+uint64(v.cpu)*m.cpuStride, unsafe.Slice((*byte)(v.prog), m.spec.ValueSize), m.fields)
}

// update sets the value of key. Go callers (goSide) may wait for memory;
// programs get ErrBusy instead, since a run waiting for reclamation could
// wait for itself.
func (m *hashMap) update(key []byte, v valueSrc, flags uint64, goSide bool) error {
	if err := checkFlags(flags, m.fields); err != nil {
		return err
	}
	locked := flags&UpdateLock != 0
	flags &^= UpdateLock
	hash := HashKey(m.seed, key)
	b := hash & m.mask
	head := m.bucket(hash)
	if locked {
		// BPF_F_LOCK writes an existing element in place, holding its
		// spin lock (values with a lock are never per-CPU); a new one
		// is inserted as without the flag.
		src := v.b
		if v.prog != nil {
			src = unsafe.Slice((*byte)(v.prog), m.spec.ValueSize)
		}
		m.locks[b].Lock()
		_, old := m.find(head, hash, key)
		if old != 0 {
			err := checkExists(true, flags)
			if err == nil {
				storeLocked(m.value(old), src, m.fields)
			}
			m.locks[b].Unlock()
			return err
		}
		m.locks[b].Unlock()
	}
	if v.prog != nil && m.ncpu > 1 {
		// Per-CPU updates from programs write the CPU's value of an
		// existing element in place, as the kernel does.
		m.locks[b].Lock()
		_, old := m.find(head, hash, key)
		if old != 0 {
			err := checkExists(true, flags)
			if err == nil {
				m.putCPUValue(old, v)
			}
			m.locks[b].Unlock()
			return err
		}
		m.locks[b].Unlock()
	}
	// Allocate and fill outside the lock: the pool may need to wait, and
	// eviction takes other buckets' locks.
	e := m.elems.get()
	if e != 0 {
		m.prepare(e, hash, key, v)
	}
	for {
		m.locks[b].Lock()
		prev, old := m.find(head, hash, key)
		err := checkExists(old != 0, flags)
		switch {
		case err != nil:
		case old != 0 && v.prog != nil && m.ncpu > 1:
			// Inserted by someone else since the check above.
			m.putCPUValue(old, v)
		case old == 0 && !m.reserve():
			if !m.lru {
				err = fmt.Errorf("%d entries: %w", m.max, ErrFull)
				break
			}
			m.locks[b].Unlock()
			if !m.evict() {
				m.elems.putIf(e)
				return fmt.Errorf("%d entries, none evictable: %w", m.max, ErrFull)
			}
			continue
		case e == 0:
			// The update is valid but there is no free element: wait
			// for one outside the lock (Go side), then start over.
			if old == 0 {
				m.count.Add(-1)
			}
			m.locks[b].Unlock()
			if !goSide {
				return fmt.Errorf("no free element: %w", ErrBusy)
			}
			if e, err = m.elems.getWait(); err != nil {
				return err
			}
			m.prepare(e, hash, key, v)
			continue
		case old != 0:
			if m.lru {
				// A replaced element keeps its place in the LRU order.
				atomic.StoreUint32((*uint32)(vm.Ptr(e+HashElemRef)), 1)
			}
			store(e+HashElemNext, load(old+HashElemNext))
			store(prev, e)
			m.unlink(old)
			e = 0
		default:
			store(e+HashElemNext, load(head))
			store(head, e)
			e = 0
		}
		m.locks[b].Unlock()
		m.elems.putIf(e) // not linked: reusable at once
		return err
	}
}

// checkExists applies the update flags to whether the key exists.
func checkExists(exists bool, flags uint64) error {
	switch {
	case exists && flags == UpdateNoExist:
		return ErrKeyExist
	case !exists && flags == UpdateExist:
		return ErrKeyNotExist
	}
	return nil
}

// reserve counts an element about to be inserted, or reports false when
// the map is full. The count never exceeds max_entries, even transiently.
func (m *hashMap) reserve() bool {
	for {
		n := m.count.Load()
		if n >= m.max {
			return false
		}
		if m.count.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// prepare writes everything but the link of a new element.
func (m *hashMap) prepare(e uint64, hash uint32, key []byte, v valueSrc) {
	store(e+HashElemNext, 0)
	atomic.StoreUint32((*uint32)(vm.Ptr(e+HashElemHash)), hash)
	atomic.StoreUint32((*uint32)(vm.Ptr(e+HashElemRef)), 0)
	// The key's padding is zeroed, so that inlined lookups may compare
	// keys of up to 8 bytes as one 8-byte word (HashElemKey).
	clear(bytesAt(e+HashElemKey, m.valOff-HashElemKey))
	copy(m.key(e), key)
	if m.apart {
		*(*uint64)(vm.Ptr(e + m.valOff)) = m.vbase + uint64(m.elems.index(e))*m.vsize
	}
	m.fill(e, v)
}

// unlink retires an element just unlinked; the caller holds its bucket lock.
func (m *hashMap) unlink(e uint64) {
	if m.unlinked != nil {
		m.unlinked(e)
	}
	if hasFreeFields(m.fields) {
		// The element's references go with it (free_htab_elem's
		// bpf_obj_free_fields).
		for cpu := range m.ncpu {
			freeFields(m.value(e)+uint64(cpu)*m.vsize, m.fields)
		}
	}
	m.elems.retire(e)
}

// remove deletes key, first copying its value to out when out is not nil.
func (m *hashMap) remove(key, out []byte) error {
	hash := HashKey(m.seed, key)
	b := hash & m.mask
	m.locks[b].Lock()
	defer m.locks[b].Unlock()
	prev, e := m.find(m.bucket(hash), hash, key)
	if e == 0 {
		return ErrKeyNotExist
	}
	if out != nil {
		m.loadValues(out, e)
	}
	store(prev, load(e+HashElemNext))
	m.count.Add(-1)
	m.unlink(e)
	return nil
}

func (m *hashMap) Update(key, value unsafe.Pointer, flags uint64, cpu int) error {
	return m.update(m.progKey(key), valueSrc{prog: value, cpu: cpu}, flags, false)
}

func (m *hashMap) Delete(key unsafe.Pointer) error {
	return m.remove(m.progKey(key), nil)
}

// checkKey validates the length of a key from Go.
func (m *hashMap) checkKey(key []byte) error {
	if uint64(len(key)) != m.keySize {
		return fmt.Errorf("key of %d bytes, want %d: %w", len(key), m.keySize, ErrInvalid)
	}
	return nil
}

// checkValue validates the length of a value from Go.
func (m *hashMap) checkValue(value []byte) error {
	if want := ValueSizeBytes(m.spec, m.ncpu); len(value) != want {
		return fmt.Errorf("value of %d bytes, want %d: %w", len(value), want, ErrInvalid)
	}
	return nil
}

func (m *hashMap) LookupBytes(key, value []byte) error {
	if err := m.checkKey(key); err != nil {
		return err
	}
	if err := m.checkValue(value); err != nil {
		return err
	}
	// Go callers are not inside a Domain run: the bucket lock keeps the
	// element from being retired while it is copied.
	hash := HashKey(m.seed, key)
	b := hash & m.mask
	m.locks[b].Lock()
	defer m.locks[b].Unlock()
	_, e := m.find(m.bucket(hash), hash, key)
	if e == 0 {
		return ErrKeyNotExist
	}
	m.loadValues(value, e)
	return nil
}

func (m *hashMap) UpdateBytes(key, value []byte, flags uint64) error {
	if err := m.checkKey(key); err != nil {
		return err
	}
	if err := m.checkValue(value); err != nil {
		return err
	}
	return m.update(key, valueSrc{b: value}, flags, true)
}

func (m *hashMap) LookupAndDelete(key, value []byte) error {
	if err := m.checkKey(key); err != nil {
		return err
	}
	if err := m.checkValue(value); err != nil {
		return err
	}
	return m.remove(key, value)
}

// NextKey walks buckets in order and each chain from its head. A key that is
// not in the map restarts the walk at the first key, as in the kernel.
func (m *hashMap) NextKey(key, next []byte) error {
	if err := m.checkKey(next); err != nil {
		return err
	}
	var start uint64
	if key != nil {
		if err := m.checkKey(key); err != nil {
			return err
		}
		hash := HashKey(m.seed, key)
		b := hash & m.mask
		m.locks[b].Lock()
		if _, e := m.find(m.bucket(hash), hash, key); e != 0 {
			if n := load(e + HashElemNext); n != 0 {
				copy(next, m.key(n))
				m.locks[b].Unlock()
				return nil
			}
			start = uint64(b) + 1
		}
		m.locks[b].Unlock()
	}
	for b := start; b <= uint64(m.mask); b++ {
		if load(m.buckets+b*8) == 0 {
			continue
		}
		m.locks[b].Lock()
		if e := load(m.buckets + b*8); e != 0 {
			copy(next, m.key(e))
			m.locks[b].Unlock()
			return nil
		}
		m.locks[b].Unlock()
	}
	return ErrKeyNotExist
}

// len returns the number of keys.
func (m *hashMap) len() int { return int(m.count.Load()) }

func (m *hashMap) free() error {
	if hasFreeFields(m.fields) && m.buckets != 0 {
		// The elements still linked hold their kptrs' references,
		// which go with the map (htab_free_prealloced_fields).
		for b := uint64(0); b <= uint64(m.mask); b++ {
			for e := load(m.buckets + b*8); e != 0; e = load(e + HashElemNext) {
				for cpu := range m.ncpu {
					freeFields(m.value(e)+uint64(cpu)*m.vsize, m.fields)
				}
			}
		}
	}
	err := m.elems.close()
	if m.bmem != nil {
		if err2 := m.bmem.Free(); err == nil {
			err = err2
		}
		m.bmem = nil
	}
	if m.vmem != nil {
		if err2 := m.vmem.Free(); err == nil {
			err = err2
		}
		m.vmem = nil
	}
	return err
}
