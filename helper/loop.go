package helper

import (
	"errors"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// loopHelpers call a callback of the program's (kernel/bpf/bpf_iter.c,
// helpers.c).
var loopHelpers = []Helper{
	{Proto: Proto{Name: "bpf_loop", Args: [5]ArgType{ArgAnything, ArgCallback, ArgStackOrNull, ArgAnything}}, Func: helperLoop, Inline: InlineLoop},
	{Proto: Proto{Name: "bpf_for_each_map_elem", Args: [5]ArgType{ArgConstMapPtr, ArgCallback, ArgStackOrNull, ArgAnything}}, Func: helperForEachMapElem},
}

// maxLoops is the kernel's BPF_MAX_LOOPS: the most iterations bpf_loop runs.
const maxLoops = 1 << 23

// helperLoop is bpf_loop(nr_loops, callback, ctx, flags): it calls
// callback(index, ctx) for index 0 to nr_loops-1 until the callback returns
// non-zero, and returns the number of calls. flags must be 0 (-EINVAL);
// more than 1<<23 loops give -E2BIG.
func helperLoop(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	n := uint32(r1)
	if r4 != 0 {
		return neg(einval), nil
	}
	if n > maxLoops {
		return neg(e2big), nil
	}
	r := runner.Of(e)
	frames := r.EnterCallbacks(e, vm.Region{})
	defer r.LeaveCallbacks(e, frames, vm.Region{})
	// Each callback is a short run of its own, which may end before the
	// engines' own looks at the context come round.
	var pace vm.Pacer
	for i := range uint64(n) {
		if err := pace.Stopped(e); err != nil {
			return 0, err
		}
		ret, err := r.Callback(e, r2, i, r3, 0, 0, 0)
		if err != nil {
			return 0, err
		}
		if ret != 0 {
			return i + 1, nil
		}
	}
	return uint64(n), nil
}

// helperForEachMapElem is bpf_for_each_map_elem(map, callback, ctx, flags):
// it calls callback(map, key, value, ctx) for each element of an array or
// hash map (per-CPU maps: the runner's value) until the callback returns
// non-zero, and returns the number of calls. flags must be 0.
//
// Keys are copied to a per-runner scratch area that the callback may read.
// Hash maps are walked with NextKey; as in the kernel, a callback deleting
// elements does not stop the walk, but it may then visit some elements
// twice (never more than max_entries calls in all).
func helperForEachMapElem(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	if r4 != 0 {
		return neg(einval), nil
	}
	spec := m.Spec()
	if spec.KeySize == 0 || spec.KeySize > runner.ScratchKeyMax {
		return neg(einval), nil
	}
	switch spec.Type {
	case maps.Array, maps.PerCPUArray, maps.Hash, maps.PerCPUHash, maps.LRUHash, maps.LRUPerCPUHash:
	default:
		return neg(einval), nil
	}
	if e.Checked {
		grantMap(e, m)
	}
	r := runner.Of(e)
	cur, next, ok := r.ScratchSlots()
	if !ok {
		return neg(ebusy), nil
	}
	defer r.LeaveScratch()
	// The callback may read the key, not write it.
	key := vm.Region{Start: cur, End: cur + uint64(spec.KeySize)}
	frames := r.EnterCallbacks(e, key)
	defer r.LeaveCallbacks(e, frames, key)
	curKey := vm.Slice(cur, uint64(spec.KeySize))
	nextKey := vm.Slice(next, uint64(spec.KeySize))
	handle := m.Handle()

	var n uint64
	var pace vm.Pacer // as in helperLoop
	visit := func() (stop bool, err error) {
		value := m.Lookup(vm.Ptr(cur), e.CPU)
		if value == nil {
			return false, nil // deleted meanwhile
		}
		if err := pace.Stopped(e); err != nil {
			return true, err
		}
		ret, err := r.Callback(e, r2, handle, cur, vm.Addr(value), r3, 0)
		n++
		return ret != 0 || err != nil, err
	}
	if spec.Type == maps.Array || spec.Type == maps.PerCPUArray {
		for i := range spec.MaxEntries {
			*(*uint32)(vm.Ptr(cur)) = i
			if stop, err := visit(); stop {
				return n, err
			}
		}
		return n, nil
	}
	// Fetch the next key before the callback runs, so that the callback
	// may delete the element it is given.
	// NextKey restarts from the first key after a deleted one: bound the
	// walk even if elements keep disappearing under it.
	err = m.NextKey(nil, nextKey)
	for steps := uint64(0); err == nil && n < uint64(spec.MaxEntries) && steps < 4*uint64(spec.MaxEntries)+16; steps++ {
		copy(curKey, nextKey)
		err = m.NextKey(curKey, nextKey)
		if stop, cerr := visit(); stop {
			return n, cerr
		}
	}
	if err != nil && !errors.Is(err, maps.ErrKeyNotExist) {
		return 0, err
	}
	return n, nil
}
