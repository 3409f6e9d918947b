package maps

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// ProgramArray is BPF_MAP_TYPE_PROG_ARRAY (the type constant takes the name
// ProgArray): the programs of tail calls, by id. New returns it as a Map;
// the tail-call helper type-asserts it and calls Get.
//
// Each slot is a uint64 off-heap, ProgPresent|id or 0 when empty (a program
// id may be anything, 0 included), read with one atomic load by Get or by
// native code.
//
// With Options.Programs each slot holds a reference to its program, so a
// program closed by its user stays callable while a slot holds it. As in
// the kernel, closing the array (its user's reference) empties it: this
// breaks the cycle of a program that references the array it sits in.
type ProgramArray struct {
	header
	spec  Spec
	mem   *vm.Mem
	base  uint64
	progs ProgramRefs

	mu      sync.Mutex // Go-side writers
	cleared bool       // closed and emptied: no more updates
}

// ProgPresent marks a non-empty program array slot; the low 32 bits hold the
// program id.
const ProgPresent = 1 << 32

// Header field offsets of program arrays, relative to HeaderFields.
const (
	ProgArrayFieldBase       = 0 // uint64: address of the slots
	ProgArrayFieldMaxEntries = 8 // uint32
)

func newProgArray(spec Spec, opts Options) (*ProgramArray, error) {
	mem, err := vm.Alloc(int(spec.MaxEntries) * 8)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	p := &ProgramArray{spec: spec, mem: mem, base: mem.Addr(), progs: opts.Programs}
	if err := p.header.init(p); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	*(*uint64)(p.field(ProgArrayFieldBase)) = p.base
	*(*uint32)(p.field(ProgArrayFieldMaxEntries)) = spec.MaxEntries
	return p, nil
}

// Spec returns the spec the array was created with.
func (p *ProgramArray) Spec() Spec { return p.spec }

// Memory is empty: programs never get pointers into a program array.
func (p *ProgramArray) Memory() []vm.Region { return nil }

func (p *ProgramArray) slot(i uint32) *uint64 { return (*uint64)(vm.Ptr(p.base + uint64(i)*8)) }

// Get returns the id of the program at index, without a lock.
func (p *ProgramArray) Get(index uint32) (id uint32, ok bool) {
	if index >= p.spec.MaxEntries {
		return 0, false
	}
	v := atomic.LoadUint64(p.slot(index))
	return uint32(v), v&ProgPresent != 0
}

// Lookup gives programs nothing: the verifier allows only tail calls.
func (p *ProgramArray) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update is not allowed from programs, as the verifier has it.
func (p *ProgramArray) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of a prog_array from a program: %w", ErrNotSupported)
}

// Delete empties a slot: ErrFull (E2BIG) out of range, ErrKeyNotExist when
// already empty, as the kernel.
func (p *ProgramArray) Delete(key unsafe.Pointer) error {
	i := *(*uint32)(key)
	if i >= p.spec.MaxEntries {
		return fmt.Errorf("index %d of %d: %w", i, p.spec.MaxEntries, ErrFull)
	}
	p.mu.Lock()
	old := atomic.SwapUint64(p.slot(i), 0)
	p.mu.Unlock()
	if old == 0 {
		return ErrKeyNotExist
	}
	p.drop(old)
	return nil
}

// drop releases the program of a slot value just removed.
func (p *ProgramArray) drop(v uint64) {
	if p.progs != nil && v&ProgPresent != 0 {
		p.progs.Release(uint32(v))
	}
}

func index4(b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("key of %d bytes, want 4: %w", len(b), ErrInvalid)
	}
	return *(*uint32)(unsafe.Pointer(&b[0])), nil
}

// LookupBytes writes the id of the program at key; ErrKeyNotExist for
// an empty slot or an index out of range.
func (p *ProgramArray) LookupBytes(key, value []byte) error {
	i, err := index4(key)
	if err != nil {
		return err
	}
	if len(value) != 4 {
		return fmt.Errorf("value of %d bytes, want 4: %w", len(value), ErrInvalid)
	}
	id, ok := p.Get(i)
	if !ok {
		return ErrKeyNotExist
	}
	*(*uint32)(unsafe.Pointer(&value[0])) = id
	return nil
}

// UpdateBytes stores a program id; only UpdateAny is allowed, as for the
// kernel's fd arrays.
func (p *ProgramArray) UpdateBytes(key, value []byte, flags uint64) error {
	i, err := index4(key)
	if err != nil {
		return err
	}
	if len(value) != 4 {
		return fmt.Errorf("value of %d bytes, want 4: %w", len(value), ErrInvalid)
	}
	if flags != UpdateAny {
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	}
	if i >= p.spec.MaxEntries {
		return fmt.Errorf("index %d of %d: %w", i, p.spec.MaxEntries, ErrFull)
	}
	id := *(*uint32)(unsafe.Pointer(&value[0]))
	if p.progs != nil && !p.progs.Acquire(id) {
		return fmt.Errorf("no program with id %d: %w", id, ErrInvalid)
	}
	p.mu.Lock()
	if p.cleared {
		p.mu.Unlock()
		p.drop(ProgPresent | uint64(id))
		return fmt.Errorf("prog_array %s: %w", p.spec.Name, ErrClosed)
	}
	old := atomic.SwapUint64(p.slot(i), ProgPresent|uint64(id))
	p.mu.Unlock()
	p.drop(old)
	return nil
}

// LookupAndDelete is not supported, as in the kernel.
func (p *ProgramArray) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a prog_array: %w", ErrNotSupported)
}

// NextKey walks the indices, as for arrays.
func (p *ProgramArray) NextKey(key, next []byte) error {
	return arrayNextKey(p.spec.MaxEntries, key, next)
}

// arrayNextKey is NextKey of array-like maps: every index exists.
func arrayNextKey(n uint32, key, next []byte) error {
	if len(next) != 4 {
		return fmt.Errorf("key of %d bytes, want 4: %w", len(next), ErrInvalid)
	}
	var i uint32
	if key != nil {
		k, err := index4(key)
		if err != nil {
			return err
		}
		if k < n {
			i = k + 1
		}
	}
	if i >= n {
		return ErrKeyNotExist
	}
	*(*uint32)(unsafe.Pointer(&next[0])) = i
	return nil
}

// Close empties the array, as the kernel does when the last user reference
// to a prog_array goes, and drops the creator's reference.
func (p *ProgramArray) Close() error {
	if !p.Closed() {
		p.clear()
	}
	return p.header.Close()
}

// clear empties every slot and refuses later updates.
func (p *ProgramArray) clear() {
	p.mu.Lock()
	p.cleared = true
	p.mu.Unlock()
	for i := range p.spec.MaxEntries {
		p.drop(atomic.SwapUint64(p.slot(i), 0))
	}
}

func (p *ProgramArray) free() error {
	p.clear()
	return p.mem.Free()
}
