package maps

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// bloomFilter is BPF_MAP_TYPE_BLOOM_FILTER: a keyless set of values that
// answers "maybe present" or "certainly absent". Values are added with push
// and tested with peek; there is no lookup, delete or iteration.
//
// The bit array is sized as the kernel's: max_entries * hashes * 7/5 bits
// (1/ln 2, which minimises false positives), rounded up to a power of two
// and at least 64, or 2^32 bits when that overflows. The k bit positions
// of a value come from two 32-bit hashes by double hashing (h1 + i*h2),
// where the kernel computes k jhash values; any hash serves, since only
// false positives depend on it. Pushes set bits with atomic ORs and peeks
// read them with atomic loads, so neither takes a lock, as in the kernel.
type bloomFilter struct {
	header
	spec   Spec
	hashes uint32
	mask   uint32 // bits - 1
	seed   uint64
	mem    *vm.Mem
	words  uint64 // address of the bit array, 64-bit words
}

const (
	// bloomDefaultHashes is the number of hash functions when map_extra
	// is 0.
	bloomDefaultHashes = 5
	// bloomHashMask is the part of map_extra that may be set.
	bloomHashMask = 0xf
)

func validateBloom(s Spec) error {
	if s.ValueSize > kmallocMaxSize {
		return fmt.Errorf("%s value size %d over %d: %w", typeName(s.Type), s.ValueSize, kmallocMaxSize, ErrFull)
	}
	if s.KeySize != 0 || s.ValueSize == 0 {
		return fmt.Errorf("%s key size %d, value size %d: want no key and a value: %w", typeName(s.Type), s.KeySize, s.ValueSize, ErrInvalid)
	}
	if err := checkFlagSet(s, FlagNumaNode|FlagZeroSeed|flagsAccess); err != nil {
		return err
	}
	if s.MapExtra&^bloomHashMask != 0 {
		return fmt.Errorf("%s map_extra %#x: the number of hash functions is 1 to 15: %w", typeName(s.Type), s.MapExtra, ErrInvalid)
	}
	return nil
}

func newBloom(spec Spec, _ Options) (*bloomFilter, error) {
	b := &bloomFilter{spec: spec, hashes: uint32(spec.MapExtra)}
	if b.hashes == 0 {
		b.hashes = bloomDefaultHashes
	}
	nbits := uint64(spec.MaxEntries) * uint64(b.hashes)
	nbits = nbits / 5 * 7
	switch {
	case nbits > 1<<31:
		nbits = 1 << 32
	case nbits <= 64:
		nbits = 64
	default:
		nbits = 1 << bits.Len64(nbits-1)
	}
	b.mask = uint32(nbits - 1)
	if spec.Flags&FlagZeroSeed == 0 {
		var s [8]byte
		rand.Read(s[:])
		b.seed = binary.LittleEndian.Uint64(s[:])
	}
	mem, err := vm.Alloc(int(nbits / 8))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	b.mem, b.words = mem, mem.Addr()
	if err := b.header.init(b); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	return b, nil
}

func (b *bloomFilter) Spec() Spec { return b.spec }

// Programs never get pointers into a bloom filter.
func (b *bloomFilter) Memory() []vm.Region { return nil }

// positions calls f with the bit positions of value until f returns false.
func (b *bloomFilter) positions(value []byte, f func(word uint64, bit uint64) bool) {
	h1 := HashKey(b.seed, value)
	h2 := HashKey(b.seed^HashK2, value) | 1
	for i := range b.hashes {
		pos := (h1 + i*h2) & b.mask
		if !f(b.words+uint64(pos/64)*8, 1<<(pos%64)) {
			return
		}
	}
}

func (b *bloomFilter) push(value []byte, flags uint64) error {
	if flags != UpdateAny {
		return fmt.Errorf("push flags %#x: %w", flags, ErrInvalid)
	}
	b.positions(value, func(word, bit uint64) bool {
		w := (*atomic.Uint64)(vm.Ptr(word))
		if w.Load()&bit == 0 {
			w.Or(bit)
		}
		return true
	})
	return nil
}

func (b *bloomFilter) peek(value []byte) error {
	found := true
	b.positions(value, func(word, bit uint64) bool {
		found = (*atomic.Uint64)(vm.Ptr(word)).Load()&bit != 0
		return found
	})
	if !found {
		return ErrKeyNotExist
	}
	return nil
}

func (b *bloomFilter) progValue(value unsafe.Pointer) []byte {
	return unsafe.Slice((*byte)(value), b.spec.ValueSize)
}

// Push adds a value (bpf_map_push_elem); flags must be BPF_ANY.
func (b *bloomFilter) Push(value unsafe.Pointer, flags uint64) error {
	return b.push(b.progValue(value), flags)
}

// Peek tests a value (bpf_map_peek_elem): nil when it may have been
// pushed, ErrKeyNotExist when it certainly was not. It reads value, where
// a queue's peek writes it.
func (b *bloomFilter) Peek(value unsafe.Pointer) error { return b.peek(b.progValue(value)) }

// Pop is not supported, as in the kernel.
func (b *bloomFilter) Pop(unsafe.Pointer) error {
	return fmt.Errorf("pop from a %s: %w", typeName(b.spec.Type), ErrNotSupported)
}

// Lookup gives programs nothing: they use peek.
func (b *bloomFilter) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update from a program is refused (the verifier refuses the call before).
func (b *bloomFilter) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of a %s: %w", typeName(b.spec.Type), ErrInvalid)
}

// Delete is not supported, as in the kernel.
func (b *bloomFilter) Delete(unsafe.Pointer) error {
	return fmt.Errorf("delete from a %s: %w", typeName(b.spec.Type), ErrNotSupported)
}

func (b *bloomFilter) checkGo(key, value []byte) error {
	if len(key) != 0 {
		return fmt.Errorf("key of %d bytes, want none: %w", len(key), ErrInvalid)
	}
	if len(value) != int(b.spec.ValueSize) {
		return fmt.Errorf("value of %d bytes, want %d: %w", len(value), b.spec.ValueSize, ErrInvalid)
	}
	return nil
}

// LookupBytes tests value, as the kernel's lookup syscall does for bloom
// filters: value is read, not written.
func (b *bloomFilter) LookupBytes(key, value []byte) error {
	if err := b.checkGo(key, value); err != nil {
		return err
	}
	return b.peek(value)
}

// UpdateBytes pushes value, as the kernel's update syscall.
func (b *bloomFilter) UpdateBytes(key, value []byte, flags uint64) error {
	if err := b.checkGo(key, value); err != nil {
		return err
	}
	return b.push(value, flags)
}

// LookupAndDelete is not supported, as in the kernel.
func (b *bloomFilter) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete on a %s: %w", typeName(b.spec.Type), ErrNotSupported)
}

// NextKey is not supported, as in the kernel.
func (b *bloomFilter) NextKey(key, next []byte) error {
	return fmt.Errorf("next key of a %s: %w", typeName(b.spec.Type), ErrNotSupported)
}

func (b *bloomFilter) free() error { return b.mem.Free() }
