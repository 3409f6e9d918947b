package maps

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// StackTrace is BPF_MAP_TYPE_STACK_TRACE.
const StackTrace Type = 7

// FlagStackBuildID is BPF_F_STACK_BUILD_ID: a stack trace map's frames are
// struct bpf_stack_build_id rather than addresses.
const FlagStackBuildID uint32 = 1 << 5

// stackTraceInfo describes stack trace maps: only bpf_get_stackid takes
// them; Go code reads, deletes and walks the stacks it stored.
var stackTraceInfo = typeInfo{maps: stackTraces{}, kernelStruct: "bpf_stack_map", helpers: []string{"bpf_get_stackid"}, onlyHelpers: true, notInner: true}

// stackTraces creates and validates stack trace maps.
type stackTraces struct{}

func (stackTraces) create(s Spec, o Options) (Map, error) { return newStackMap(s, o) }
func (stackTraces) check(s Spec) error                    { return validateStackMap(s) }

// Stack trace limits, as the kernel's.
const (
	// MaxStackDepth is the kernel's default sysctl_perf_event_max_stack:
	// the most frames a stack holds.
	MaxStackDepth = 127
	// StackBuildIDSize is the size of struct bpf_stack_build_id.
	StackBuildIDSize = 32
)

func validateStackMap(s Spec) error {
	if err := checkFlagSet(s, FlagNumaNode|FlagRdonly|FlagWronly|FlagStackBuildID); err != nil {
		return err
	}
	elem := uint32(8)
	if s.Flags&FlagStackBuildID != 0 {
		elem = StackBuildIDSize
	}
	if s.MaxEntries == 0 || s.KeySize != 4 || s.ValueSize < 8 || s.ValueSize%elem != 0 || s.ValueSize/elem > MaxStackDepth {
		return fmt.Errorf("%s key size %d, value size %d, max entries %d: want a u32 key and 1 to %d frames of %d bytes: %w",
			s.Type, s.KeySize, s.ValueSize, s.MaxEntries, MaxStackDepth, elem, ErrInvalid)
	}
	if s.MaxEntries > 1<<31 {
		return fmt.Errorf("%s max entries %d over 2^31: %w", s.Type, s.MaxEntries, ErrFull)
	}
	return nil
}

// stackMap is BPF_MAP_TYPE_STACK_TRACE: buckets of stacks by the hash of
// their frames, as the kernel's: a stack's id is its jhash2 (seed 0) masked
// to the buckets, max_entries rounded up to a power of two. Programs never
// address it, so the stacks live on the Go heap, behind a mutex.
type stackMap struct {
	header
	spec    Spec
	elem    uint32 // bytes per frame
	buckets []stackBucket
	mu      sync.Mutex
}

// stackBucket is a stored stack: its frames' bytes (nil when empty) and
// their hash.
type stackBucket struct {
	data []byte
	hash uint32
}

func newStackMap(spec Spec, _ Options) (Map, error) {
	m := &stackMap{spec: spec, elem: 8}
	if spec.Flags&FlagStackBuildID != 0 {
		m.elem = StackBuildIDSize
	}
	m.buckets = make([]stackBucket, 1<<bits.Len32(spec.MaxEntries-1))
	if err := m.header.init(m); err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	return m, nil
}

func (m *stackMap) Spec() Spec { return m.spec }

// Programs never get pointers into a stack trace map.
func (m *stackMap) Memory() []vm.Region { return nil }

// Stack trace flags of bpf_get_stackid.
const (
	StackFastCmp = 1 << 9  // BPF_F_FAST_STACK_CMP
	StackReuseID = 1 << 10 // BPF_F_REUSE_STACKID
)

// StoreStack stores a stack (its frames, each frameBytes of the map's
// value, innermost first, already past what the caller skips) as the
// kernel's __bpf_get_stackid does and returns its id: the id of the same
// stack stored before (with StackFastCmp, of any stack of the same hash),
// ErrKeyExist when another stack has the id and flags lack StackReuseID
// (which replaces it).
func (m *stackMap) StoreStack(frames []byte, flags uint64) (uint32, error) {
	frames = frames[:min(len(frames), int(m.spec.ValueSize))]
	words := make([]uint32, len(frames)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(frames[4*i:])
	}
	h := Jhash2(words, 0)
	id := h & uint32(len(m.buckets)-1)
	m.mu.Lock()
	defer m.mu.Unlock()
	b := &m.buckets[id]
	match := b.data != nil && b.hash == h
	switch {
	case match && flags&StackFastCmp != 0:
		return id, nil
	case match && string(b.data) == string(frames):
		return id, nil
	case b.data != nil && flags&StackReuseID == 0:
		return 0, ErrKeyExist
	}
	b.data, b.hash = append(make([]byte, 0, len(frames)), frames...), h
	return id, nil
}

// FrameSize is the bytes of one frame of the map's stacks: 8, or
// StackBuildIDSize with FlagStackBuildID.
func (m *stackMap) FrameSize() uint32 { return m.elem }

// Lookup gives programs nothing: the verifier refuses lookups.
func (m *stackMap) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

func (m *stackMap) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of a %s: %w", m.spec.Type, ErrInvalid)
}

func (m *stackMap) Delete(key unsafe.Pointer) error {
	return m.delete(*(*uint32)(key))
}

func (m *stackMap) delete(id uint32) error {
	if id >= uint32(len(m.buckets)) {
		return fmt.Errorf("stack id %d of %d: %w", id, len(m.buckets), ErrFull)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets[id].data == nil {
		return ErrKeyNotExist
	}
	m.buckets[id] = stackBucket{}
	return nil
}

func (m *stackMap) checkGo(key, value []byte) error {
	if len(key) != 4 {
		return fmt.Errorf("key of %d bytes, want 4: %w", len(key), ErrInvalid)
	}
	if value != nil && len(value) != int(m.spec.ValueSize) {
		return fmt.Errorf("value of %d bytes, want %d: %w", len(value), m.spec.ValueSize, ErrInvalid)
	}
	return nil
}

// LookupBytes copies the stack of id key, zero-padded, as the kernel's
// bpf_stackmap_copy.
func (m *stackMap) LookupBytes(key, value []byte) error {
	return m.copyStack(key, value, false)
}

func (m *stackMap) copyStack(key, value []byte, del bool) error {
	if err := m.checkGo(key, value); err != nil {
		return err
	}
	id := binary.LittleEndian.Uint32(key)
	m.mu.Lock()
	defer m.mu.Unlock()
	if id >= uint32(len(m.buckets)) || m.buckets[id].data == nil {
		return ErrKeyNotExist
	}
	n := copy(value, m.buckets[id].data)
	clear(value[n:])
	if del {
		m.buckets[id] = stackBucket{}
	}
	return nil
}

// UpdateBytes is refused, as by the kernel: only programs store stacks.
func (m *stackMap) UpdateBytes(key, value []byte, flags uint64) error {
	return fmt.Errorf("update of a %s: %w", m.spec.Type, ErrInvalid)
}

// LookupAndDelete copies the stack of id key and removes it.
func (m *stackMap) LookupAndDelete(key, value []byte) error {
	return m.copyStack(key, value, true)
}

// NextKey walks the ids holding a stack in order; an id out of range or
// empty starts again from the first, as the kernel's.
func (m *stackMap) NextKey(key, next []byte) error {
	if len(next) != 4 || key != nil && len(key) != 4 {
		return fmt.Errorf("key of %d bytes, want 4: %w", len(next), ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := uint32(0)
	if key != nil {
		if k := binary.LittleEndian.Uint32(key); k < uint32(len(m.buckets)) && m.buckets[k].data != nil {
			id = k + 1
		}
	}
	for ; id < uint32(len(m.buckets)); id++ {
		if m.buckets[id].data != nil {
			binary.LittleEndian.PutUint32(next, id)
			return nil
		}
	}
	return ErrKeyNotExist
}

func (m *stackMap) free() error { return nil }

// Jhash2 is the kernel's jhash2 (Bob Jenkins' lookup3 hashword) of words
// with seed initval: the hash stack trace maps key their stacks by.
func Jhash2(words []uint32, initval uint32) uint32 {
	a := 0xdeadbeef + uint32(len(words))<<2 + initval
	b, c := a, a
	for len(words) > 3 {
		a += words[0]
		b += words[1]
		c += words[2]
		a, b, c = jhashMix(a, b, c)
		words = words[3:]
	}
	switch len(words) {
	case 3:
		c += words[2]
		fallthrough
	case 2:
		b += words[1]
		fallthrough
	case 1:
		a += words[0]
		a, b, c = jhashFinal(a, b, c)
	}
	return c
}

func jhashMix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func jhashFinal(a, b, c uint32) (uint32, uint32, uint32) {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return a, b, c
}

// StackStore is a map bpf_get_stackid stores stacks in (a stack trace
// map).
type StackStore interface {
	StoreStack(frames []byte, flags uint64) (uint32, error)
	FrameSize() uint32
}
