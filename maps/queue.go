package maps

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// queueStack is BPF_MAP_TYPE_QUEUE and BPF_MAP_TYPE_STACK: a ring of
// max_entries+1 off-heap slots (one always empty, so that head == tail means
// empty) guarded by a mutex, as the kernel's is by a spinlock. Elements are
// pushed at the head; a queue pops at the tail (oldest first), a stack at
// the head (newest first).
type queueStack struct {
	header
	spec  Spec
	stack bool
	mem   *vm.Mem
	base  uint64
	vsize uint64 // slot stride: value size rounded up to 8
	size  uint32 // slots: max_entries + 1

	mu         sync.Mutex
	head, tail uint32
}

func newQueue(spec Spec, opts Options) (*queueStack, error) {
	q := &queueStack{spec: spec, stack: spec.Type == Stack, vsize: (uint64(spec.ValueSize) + 7) &^ 7, size: spec.MaxEntries + 1}
	if spec.MaxEntries == ^uint32(0) {
		return nil, fmt.Errorf("map %s: %s max_entries %d: %w", spec.Name, typeName(spec.Type), spec.MaxEntries, ErrFull)
	}
	bytes := q.vsize * uint64(q.size)
	if bytes > maxMapBytes {
		return nil, fmt.Errorf("map %s: %d bytes of values: %w", spec.Name, bytes, ErrFull)
	}
	mem, err := vm.Alloc(int(bytes))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	q.mem, q.base = mem, mem.Addr()
	if err := q.header.init(q); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	return q, nil
}

func (q *queueStack) Spec() Spec { return q.spec }

// Programs never get pointers into a queue: push, pop and peek copy.
func (q *queueStack) Memory() []vm.Region { return nil }

func (q *queueStack) slot(i uint32) uint64 { return q.base + uint64(i)*q.vsize }

func (q *queueStack) next(i uint32) uint32 {
	if i++; i >= q.size {
		return 0
	}
	return i
}

func (q *queueStack) prev(i uint32) uint32 {
	if i == 0 {
		return q.size - 1
	}
	return i - 1
}

// Push adds a value. With UpdateExist a full map drops its oldest element
// to make room; without it a full map gives ErrFull.
func (q *queueStack) Push(value unsafe.Pointer, flags uint64) error {
	return q.push(unsafe.Slice((*byte)(value), q.spec.ValueSize), flags)
}

func (q *queueStack) push(value []byte, flags uint64) error {
	if flags&^UpdateExist != 0 {
		return fmt.Errorf("push flags %#x: %w", flags, ErrInvalid)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next(q.head) == q.tail {
		if flags != UpdateExist {
			return fmt.Errorf("%d entries: %w", q.spec.MaxEntries, ErrFull)
		}
		q.tail = q.next(q.tail) // the oldest element, for stacks too
	}
	copy(bytesAt(q.slot(q.head), uint64(q.spec.ValueSize)), value)
	q.head = q.next(q.head)
	return nil
}

// Pop removes the next value (the oldest of a queue, the newest of a stack)
// and copies it to value; ErrKeyNotExist when empty.
func (q *queueStack) Pop(value unsafe.Pointer) error {
	return q.take(unsafe.Slice((*byte)(value), q.spec.ValueSize), true)
}

// Peek copies the value Pop would remove.
func (q *queueStack) Peek(value unsafe.Pointer) error {
	return q.take(unsafe.Slice((*byte)(value), q.spec.ValueSize), false)
}

func (q *queueStack) take(value []byte, remove bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == q.tail {
		return ErrKeyNotExist
	}
	i := q.tail
	if q.stack {
		i = q.prev(q.head)
	}
	copy(value, bytesAt(q.slot(i), uint64(q.spec.ValueSize)))
	if remove {
		if q.stack {
			q.head = i
		} else {
			q.tail = q.next(i)
		}
	}
	return nil
}

// Lookup gives programs nothing: they use peek.
func (q *queueStack) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

func (q *queueStack) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of a %s: %w", typeName(q.spec.Type), ErrInvalid)
}

func (q *queueStack) Delete(unsafe.Pointer) error {
	return fmt.Errorf("delete from a %s: %w", typeName(q.spec.Type), ErrInvalid)
}

func (q *queueStack) checkGo(key, value []byte) error {
	if len(key) != 0 {
		return fmt.Errorf("key of %d bytes, want none: %w", len(key), ErrInvalid)
	}
	if len(value) != int(q.spec.ValueSize) {
		return fmt.Errorf("value of %d bytes, want %d: %w", len(value), q.spec.ValueSize, ErrInvalid)
	}
	return nil
}

// LookupBytes peeks, as the kernel's lookup syscall does for these maps.
func (q *queueStack) LookupBytes(key, value []byte) error {
	if err := q.checkGo(key, value); err != nil {
		return err
	}
	return q.take(value, false)
}

// UpdateBytes pushes.
func (q *queueStack) UpdateBytes(key, value []byte, flags uint64) error {
	if err := q.checkGo(key, value); err != nil {
		return err
	}
	return q.push(value, flags)
}

// LookupAndDelete pops.
func (q *queueStack) LookupAndDelete(key, value []byte) error {
	if err := q.checkGo(key, value); err != nil {
		return err
	}
	return q.take(value, true)
}

func (q *queueStack) NextKey(key, next []byte) error {
	return fmt.Errorf("next key of a %s: %w", typeName(q.spec.Type), ErrInvalid)
}

func (q *queueStack) free() error { return q.mem.Free() }
