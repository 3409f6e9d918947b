package bpfvm

import (
	"errors"
	"fmt"
	"unsafe"

	"bpfvm/isa"
	"bpfvm/jit/amd64"
	"bpfvm/maps"
	"bpfvm/vm"
)

// helper resolves a helper id for a program: the program's own overrides
// first, then the built-in set.
func (p *Program) helper(id int32) vm.Helper {
	if h, ok := p.opts.Helpers[id]; ok {
		return h
	}
	if isa.IsKfuncHelper(id) {
		return builtinKfuncs[id-isa.KfuncHelperBase]
	}
	return builtinHelpers[id]
}

// Helpers with native routines in the JIT (jit/amd64 natives_amd64.s),
// which implement them exactly as the Go helpers below do.
var (
	idGetSMPProcessorID, _ = isa.HelperID("bpf_get_smp_processor_id")
	idGetPrandomU32, _     = isa.HelperID("bpf_get_prandom_u32")
	idGetNumaNodeID, _     = isa.HelperID("bpf_get_numa_node_id")
)

// native says which native routine, if any, JIT code calls for a helper
// instead of exiting to Go: only built-in helpers the program did not
// override.
func (p *Program) native(id int32) amd64.Native {
	if _, ok := p.opts.Helpers[id]; ok || p.opts.JIT.NoNatives {
		return amd64.NoNative
	}
	switch id {
	case idGetSMPProcessorID:
		return amd64.NativeCPU
	case idGetPrandomU32:
		return amd64.NativeRandom
	case idGetNumaNodeID:
		return amd64.NativeZero
	}
	return amd64.NoNative
}

// builtinHelpers are bpfvm's implementations of kernel helpers, by id.
var builtinHelpers = map[int32]vm.Helper{}

// register adds a built-in helper by its kernel name; it panics on a name
// the kernel does not have, which tests catch at init.
func register(name string, h vm.Helper) {
	id, ok := isa.HelperID(name)
	if !ok {
		panic("unknown helper " + name)
	}
	builtinHelpers[id] = h
}

func init() {
	register("bpf_map_lookup_elem", helperMapLookup)
	register("bpf_map_update_elem", helperMapUpdate)
	register("bpf_map_delete_elem", helperMapDelete)
	register("bpf_map_push_elem", helperMapPush)
	register("bpf_map_pop_elem", helperMapPop)
	register("bpf_map_peek_elem", helperMapPeek)
	register("bpf_for_each_map_elem", helperForEachMapElem)
	register("bpf_loop", helperLoop)
	register("bpf_tail_call", helperTailCall)

	register("bpf_ringbuf_output", helperRingbufOutput)
	register("bpf_ringbuf_reserve", helperRingbufReserve)
	register("bpf_ringbuf_submit", helperRingbufSubmit)
	register("bpf_ringbuf_discard", helperRingbufDiscard)
	register("bpf_ringbuf_query", helperRingbufQuery)
	register("bpf_perf_event_output", helperPerfEventOutput)

	register("bpf_ktime_get_ns", helperKtimeGetNS)
	register("bpf_ktime_get_boot_ns", helperKtimeGetBootNS)
	register("bpf_ktime_get_coarse_ns", helperKtimeGetCoarseNS)
	register("bpf_jiffies64", helperJiffies64)
	register("bpf_get_prandom_u32", helperGetPrandomU32)
	register("bpf_get_smp_processor_id", helperGetSMPProcessorID)
	register("bpf_get_numa_node_id", helperGetNumaNodeID)
	register("bpf_get_current_pid_tgid", helperGetCurrentPidTgid)
	register("bpf_get_current_uid_gid", helperGetCurrentUidGid)
	register("bpf_get_current_comm", helperGetCurrentComm)

	register("bpf_trace_printk", helperTracePrintk)
	register("bpf_trace_vprintk", helperTraceVprintk)
	register("bpf_snprintf", helperSnprintf)
	register("bpf_strtol", helperStrtol)
	register("bpf_strtoul", helperStrtoul)

	register("bpf_skb_load_bytes", helperSkbLoadBytes)
	register("bpf_skb_store_bytes", helperSkbStoreBytes)
	register("bpf_l3_csum_replace", helperL3CsumReplace)
	register("bpf_l4_csum_replace", helperL4CsumReplace)
	register("bpf_csum_diff", helperCsumDiff)
	register("bpf_xdp_adjust_head", helperXDPAdjustHead)
	register("bpf_xdp_adjust_tail", helperXDPAdjustTail)
	register("bpf_xdp_adjust_meta", helperXDPAdjustMeta)
	register("bpf_redirect", helperRedirect)
	register("bpf_redirect_map", helperRedirectMap)
}

// Kernel errno values that helpers return negated.
const (
	eperm      = 1
	enoent     = 2
	e2big      = 7
	eagain     = 11
	ebusy      = 16
	eexist     = 17
	einval     = 22
	enospc     = 28
	eopnotsupp = 95
)

// errno converts a map error to the negative errno a helper returns.
func errno(err error) uint64 {
	var e int64
	switch {
	case err == nil:
		return 0
	case errors.Is(err, maps.ErrKeyNotExist):
		e = enoent
	case errors.Is(err, maps.ErrKeyExist):
		e = eexist
	case errors.Is(err, maps.ErrFull):
		e = e2big
	case errors.Is(err, maps.ErrNoSpace):
		e = enospc
	case errors.Is(err, maps.ErrBusy):
		e = ebusy
	case errors.Is(err, maps.ErrNotSupported):
		e = eopnotsupp
	case errors.Is(err, maps.ErrPermission):
		e = eperm
	default:
		e = einval
	}
	return uint64(-e)
}

// runnerOf returns the runner of the run a helper is called from.
func runnerOf(e *vm.Env) *runner { return e.Value.(*runner) }

// mapArg resolves a map handle argument. In checked mode the handle comes
// from an unverified program and is validated.
func mapArg(e *vm.Env, handle uint64) (maps.Map, error) {
	if e.Checked {
		// Most handles are the program's own maps: check those without
		// the process-wide table.
		if r, ok := e.Value.(*runner); ok && r.prog != nil {
			for _, m := range r.prog.maps {
				if m.m.Handle() == handle {
					return m.m, nil
				}
			}
		}
	}
	m, err := maps.FromHandle(handle, e.Checked)
	if err != nil {
		return nil, fmt.Errorf("%w: map argument: %v", vm.ErrMemory, err)
	}
	return m, nil
}

// memArg returns a pointer to n bytes at addr after checking the access.
func memArg(e *vm.Env, addr uint64, n uint32, write bool) (unsafe.Pointer, error) {
	if err := e.Check(addr, uint64(n), write); err != nil {
		return nil, err
	}
	return vm.Ptr(addr), nil
}

func helperMapLookup(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	key, err := memArg(e, r2, m.Spec().KeySize, false)
	if err != nil {
		return 0, err
	}
	v := m.Lookup(key, e.CPU)
	if v != nil && e.Checked {
		grantMap(e, m)
	}
	return vm.Addr(v), nil
}

// grantMap lets a checked run access the values of m when m is a map the
// program reached at run time (an inner map of a map of maps) rather than
// one it references, whose memory the run was granted from the start.
func grantMap(e *vm.Env, m maps.Map) {
	r, ok := e.Value.(*runner)
	if !ok || r.prog == nil {
		return
	}
	for _, pm := range r.prog.maps {
		if pm.m == m {
			return
		}
	}
	mem := m.Memory()
	if len(mem) == 0 {
		return
	}
	for _, reg := range r.regions {
		if reg == mem[0] {
			return
		}
	}
	for _, reg := range mem {
		r.addRegion(e, reg)
	}
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
	value, err := memArg(e, r3, spec.ValueSize, false)
	if err != nil {
		return 0, err
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
