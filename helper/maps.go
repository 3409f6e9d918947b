package helper

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// mapHelpers are the helpers of generic map access (kernel/bpf/helpers.c):
// which map types each takes is the map type's business (maps.Type.TakesHelper).
var mapHelpers = []Helper{
	{Proto: Proto{Name: "bpf_map_lookup_elem", Args: [5]ArgType{ArgConstMapPtr, ArgMapKey}, Ret: RetMapValueOrNull, PktAccess: true}, Func: helperMapLookup, Inline: InlineMapLookup},
	{Proto: Proto{Name: "bpf_map_update_elem", Args: [5]ArgType{ArgConstMapPtr, ArgMapKey, ArgMapValue, ArgAnything}, PktAccess: true}, Func: helperMapUpdate},
	{Proto: Proto{Name: "bpf_map_delete_elem", Args: [5]ArgType{ArgConstMapPtr, ArgMapKey}, PktAccess: true}, Func: helperMapDelete},
	{Proto: Proto{Name: "bpf_map_push_elem", Args: [5]ArgType{ArgConstMapPtr, ArgMapValue, ArgAnything}, PktAccess: true}, Func: helperMapPush},
	{Proto: Proto{Name: "bpf_map_pop_elem", Args: [5]ArgType{ArgConstMapPtr, ArgUninitMapValue}}, Func: helperMapPop},
	{Proto: Proto{Name: "bpf_map_peek_elem", Args: [5]ArgType{ArgConstMapPtr, ArgUninitMapValue}}, Func: helperMapPeek},
	{Proto: Proto{Name: "bpf_map_lookup_percpu_elem", Args: [5]ArgType{ArgConstMapPtr, ArgMapKey, ArgAnything}, Ret: RetMapValueOrNull}, Func: helperMapLookupPercpu},
}

// helperMapLookupPercpu is bpf_map_lookup_percpu_elem(map, key, cpu): the
// value of key for CPU cpu of a per-CPU map, NULL for a CPU the map has
// no value for (cpu >= nr_cpu_ids: bpfvm's CPUs are the map's runners).
func helperMapLookupPercpu(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	return mapLookup(e, r1, r2, true, uint32(r3))
}

func helperMapLookup(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return mapLookup(e, r1, r2, false, 0)
}

// mapLookup looks the key at r2 up in the map r1: this CPU's value, or
// with percpu CPU cpu's (NULL for a CPU the map has no value for).
func mapLookup(e *vm.Env, r1, r2 uint64, percpu bool, cpu uint32) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	key, err := memArg(e, r2, m.Spec().KeySize, false)
	if err != nil {
		return 0, err
	}
	if sm, ok := m.(maps.SocketMap); ok && !percpu {
		// A sockmap's or sockhash's element is a socket: the run's
		// socket of that cookie, referenced (sock_map_lookup). One the
		// run's world lacks is NULL, as the kernel's lookup of a
		// socket that closed (which leaves its maps).
		cookie, ok := sm.Socket(key)
		if !ok {
			return 0, nil
		}
		return runner.Of(e).SocketByCookie(cookie), nil
	}
	c := e.CPU
	if percpu {
		if !m.Spec().Type.PerCPU() || cpu >= uint32(maps.NumCPU(m)) {
			return 0, nil
		}
		c = int(cpu)
	}
	v := m.Lookup(key, c)
	if v != nil && e.Checked {
		grantMap(e, m)
	}
	return vm.Addr(v), nil
}

func helperMapUpdate(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	if err := progWrite(m); err != nil {
		return errno(err), nil
	}
	spec := m.Spec()
	key, err := memArg(e, r2, spec.KeySize, false)
	if err != nil {
		return 0, err
	}
	if sm, ok := m.(maps.SocketMap); ok && spec.Type != maps.ReuseportSockArray {
		// A sockmap's or sockhash's value is a socket of the run
		// (sock_map_update_elem): -EINVAL for any other, -EOPNOTSUPP
		// for the kernel's test run's, whose protocol no sockmap takes.
		r := runner.Of(e)
		cookie, ok := r.SocketAt(r3)
		switch {
		case !ok:
			return neg(einval), nil
		case r.Net().Socket == nil:
			return neg(eopnotsupp), nil
		}
		return errno(sm.SetSocket(key, cookie, r4)), nil
	}
	value, err := memArg(e, r3, spec.ValueSize, false)
	if err != nil {
		return 0, err
	}
	if r4&maps.UpdateLock != 0 && runner.Of(e).HoldsLock() {
		// Only an unverified program calls a helper holding a lock:
		// the update would wait for the lock it holds.
		return 0, fmt.Errorf("%w: bpf_map_update_elem with BPF_F_LOCK while the run holds a lock", ErrLock)
	}
	return errno(m.Update(key, value, r4, e.CPU)), nil
}

func helperMapDelete(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	if err := progWrite(m); err != nil {
		return errno(err), nil
	}
	key, err := memArg(e, r2, m.Spec().KeySize, false)
	if err != nil {
		return 0, err
	}
	return errno(m.Delete(key)), nil
}

// progWrite refuses a program's change to a map read-only to programs.
// The verifier refuses such calls (the kernel's "write into map
// forbidden"); unverified programs in checked mode are refused at run
// time, with -EPERM, since verified programs take the contents of frozen
// read-only maps as constants.
func progWrite(m maps.Map) error {
	if m.Spec().Flags&maps.FlagRdonlyProg != 0 {
		return fmt.Errorf("map %s is read-only to programs: %w", m.Spec().Name, maps.ErrPermission)
	}
	return nil
}

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
