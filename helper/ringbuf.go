package helper

import (
	"fmt"
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// ringbufHelpers are the ring buffer's (kernel/bpf/ringbuf.c).
var ringbufHelpers = []Helper{
	{Proto: Proto{Name: "bpf_ringbuf_output", Args: [5]ArgType{ArgConstMapPtr, ArgMem, ArgConstSizeOrZero, ArgAnything}, MapTypes: ringMaps}, Func: helperRingbufOutput},
	{Proto: Proto{Name: "bpf_ringbuf_reserve", Args: [5]ArgType{ArgConstMapPtr, ArgConstAllocSize, ArgAnything}, Ret: RetRingbufMemOrNull, MapTypes: ringMaps}, Func: helperRingbufReserve},
	{Proto: Proto{Name: "bpf_ringbuf_submit", Args: [5]ArgType{ArgRingbufMem, ArgAnything}, Ret: RetVoid}, Func: helperRingbufSubmit},
	{Proto: Proto{Name: "bpf_ringbuf_discard", Args: [5]ArgType{ArgRingbufMem, ArgAnything}, Ret: RetVoid}, Func: helperRingbufDiscard},
	{Proto: Proto{Name: "bpf_ringbuf_query", Args: [5]ArgType{ArgConstMapPtr, ArgAnything}, MapTypes: ringMaps}, Func: helperRingbufQuery},
}

var ringMaps = []maps.Type{maps.RingBuf}

// ringBuffer is implemented by ring buffer maps.
type ringBuffer interface {
	Reserve(size uint64) unsafe.Pointer
	Commit(sample unsafe.Pointer, discard bool)
	Output(data []byte) error
	Query(flag uint64) uint64
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
	addr := vm.Addr(p)
	runner.Of(e).Reserve(e, rb, addr, r2)
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
	if !runner.Of(e).Commit(e, addr, discard) {
		return fmt.Errorf("%w: ring buffer sample %#x is not reserved", vm.ErrMemory, addr)
	}
	return nil
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
