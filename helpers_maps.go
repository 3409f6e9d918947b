package bpfvm

import (
	"errors"
	"fmt"
	"unsafe"

	"bpfvm/maps"
	"bpfvm/vm"
)

// helperMapPush is bpf_map_push_elem(map, value, flags) on a queue or
// stack (with BPF_EXIST a full map drops its oldest element) or a bloom
// filter (flags must be BPF_ANY).
func helperMapPush(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	if err := progWrite(m); err != nil {
		return errno(err), nil
	}
	value, err := memArg(e, r2, m.Spec().ValueSize, false)
	if err != nil {
		return 0, err
	}
	qs, ok := m.(maps.QueueStack)
	if !ok {
		return neg(einval), nil
	}
	return errno(qs.Push(value, r3)), nil
}

// helperMapPop is bpf_map_pop_elem(map, value): the next element of a
// queue or stack, removed.
func helperMapPop(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return queueGet(e, r1, r2, func(qs maps.QueueStack, v unsafe.Pointer) error {
		if err := progWrite(qs.(maps.Map)); err != nil {
			return err
		}
		return qs.Pop(v)
	})
}

// helperMapPeek is bpf_map_peek_elem(map, value): the next element of a
// queue or stack, left in place; for a bloom filter, 0 if value may have
// been pushed, -ENOENT if it was not.
func helperMapPeek(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return queueGet(e, r1, r2, maps.QueueStack.Peek)
}

func queueGet(e *vm.Env, r1, r2 uint64, get func(maps.QueueStack, unsafe.Pointer) error) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	// A bloom filter's peek tests the value: it reads it, and leaves it
	// as it is when the value is absent.
	bloom := m.Spec().Type.ValueIsKey()
	value, err := memArg(e, r2, m.Spec().ValueSize, !bloom)
	if err != nil {
		return 0, err
	}
	qs, ok := m.(maps.QueueStack)
	if !ok {
		return neg(einval), nil
	}
	err = get(qs, value)
	if errors.Is(err, maps.ErrKeyNotExist) && !bloom {
		// The kernel clears the value when the map is empty.
		clear(unsafe.Slice((*byte)(value), m.Spec().ValueSize))
	}
	return errno(err), nil
}

// ringBuffer is implemented by ring buffer maps.
type ringBuffer interface {
	Reserve(size uint64) unsafe.Pointer
	Commit(sample unsafe.Pointer, discard bool)
	Output(data []byte) error
	Query(flag uint64) uint64
}

// reservation is a ring buffer sample a run reserved and has not yet
// submitted or discarded.
type reservation struct {
	addr, size uint64
	ring       ringBuffer
}

// Ring buffer wakeup flags (BPF_RB_NO_WAKEUP, BPF_RB_FORCE_WAKEUP): valid,
// and meaningless to bpfvm's readers, which poll.
const ringWakeupFlags = 1 | 2

// helperRingbufOutput is bpf_ringbuf_output(ringbuf, data, size, flags):
// a copy of data as one record, or -EAGAIN when it does not fit.
func helperRingbufOutput(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	if r3 > 1<<32 {
		return neg(einval), nil
	}
	data, err := e.Bytes(r2, r3, false)
	if err != nil {
		return 0, err
	}
	rb, ok := m.(ringBuffer)
	if !ok || r4&^ringWakeupFlags != 0 {
		return neg(einval), nil
	}
	if rb.Output(data) != nil {
		return neg(eagain), nil
	}
	return 0, nil
}

// helperRingbufReserve is bpf_ringbuf_reserve(ringbuf, size, flags): a
// pointer to size bytes of a new record, or NULL. The run may write the
// sample until it submits or discards it.
func helperRingbufReserve(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	rb, ok := m.(ringBuffer)
	if !ok || r3 != 0 {
		return 0, nil
	}
	p := rb.Reserve(r2)
	if p == nil {
		return 0, nil
	}
	r := runnerOf(e)
	addr := vm.Addr(p)
	r.hs.reserved = append(r.hs.reserved, reservation{addr: addr, size: r2, ring: rb})
	r.addRegion(e, vm.Region{Start: addr, End: addr + r2, Writable: true})
	return addr, nil
}

// helperRingbufSubmit is bpf_ringbuf_submit(sample, flags).
func helperRingbufSubmit(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return 0, ringCommit(e, r1, false)
}

// helperRingbufDiscard is bpf_ringbuf_discard(sample, flags).
func helperRingbufDiscard(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return 0, ringCommit(e, r1, true)
}

// ringCommit submits or discards a sample the run reserved. Any other
// pointer is an error: the kernel's verifier proves the argument a live
// reservation.
func ringCommit(e *vm.Env, addr uint64, discard bool) error {
	r := runnerOf(e)
	for i, res := range r.hs.reserved {
		if res.addr != addr {
			continue
		}
		r.hs.reserved = append(r.hs.reserved[:i], r.hs.reserved[i+1:]...)
		r.removeRegion(e, vm.Region{Start: addr, End: addr + res.size, Writable: true})
		res.ring.Commit(vm.Ptr(addr), discard)
		return nil
	}
	return fmt.Errorf("%w: ring buffer sample %#x is not reserved", vm.ErrMemory, addr)
}

// helperRingbufQuery is bpf_ringbuf_query(ringbuf, flags): BPF_RB_AVAIL_DATA,
// BPF_RB_RING_SIZE, BPF_RB_CONS_POS or BPF_RB_PROD_POS; 0 for others.
func helperRingbufQuery(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	rb, ok := m.(ringBuffer)
	if !ok {
		return 0, nil
	}
	return rb.Query(r2), nil
}
