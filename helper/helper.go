// Package helper defines the kernel helpers and kfuncs bpfvm implements.
// Each is one entry (Helper, Kfunc) in the file of its kernel family: its
// kernel name, its prototype (what the verifier checks), its
// implementation, how the rewrite may inline it and which native routine,
// if any, JIT code calls for it. The verifier, the rewrite and the engines
// all read these entries, so that a helper's prototype and implementation
// cannot disagree. Which program types may call a helper is the program
// type's business (package progtype), as in the kernel's func_proto.
//
// Implementations see a run through vm.Env and its runner (package
// runner): the packet, the program's maps, the per-run state.
package helper

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// Helper is a kernel helper as bpfvm implements it.
type Helper struct {
	// ID is the kernel's helper id (enum bpf_func_id), from Proto.Name.
	ID int32
	// Proto is the prototype; Proto.Name is the kernel's name.
	Proto Proto
	// Func implements the helper.
	Func vm.Helper
	// Inline says how the rewrite may replace calls (InlineNone: never).
	Inline Inline
	// Native is the JIT's native routine implementing the helper exactly
	// as Func does (vm.NoNative: calls exit to Func).
	Native vm.Native
	// Variant names one of the kernel's several bpf_func_protos for the
	// same helper id ("" for the main one), which program types choose
	// (progtype.HelperRule.Variant): bpf_get_cgroup_classid takes the
	// skb in tc and none elsewhere.
	Variant string
}

// Inline says how the rewrite may replace a helper's calls with
// instructions (package rewrite).
type Inline uint8

// Inlining kinds.
const (
	InlineNone Inline = iota
	// InlineMapLookup: bpf_map_lookup_elem, as the map type's lookup
	// sequence (the kernel's map_gen_lookup).
	InlineMapLookup
	// InlineCPUID: bpf_get_smp_processor_id, as one instruction.
	InlineCPUID
	// InlineLoop: bpf_loop, as a loop calling the callback directly.
	InlineLoop
)

// families are the helpers of each family's file.
var families = [][]Helper{
	mapHelpers,
	ringbufHelpers,
	dynptrHelpers,
	perfHelpers,
	loopHelpers,
	tailCallHelpers,
	timeHelpers,
	cpuHelpers,
	taskHelpers,
	kptrHelpers,
	traceHelpers,
	iterHelpers,
	stackHelpers,
	printkHelpers,
	strtolHelpers,
	skbHelpers,
	sockHelpers,
	sockLookupHelpers,
	syncookieHelpers,
	fibHelpers,
	redirectHelpers,
	tunnelHelpers,
	xdpHelpers,
	lockHelpers,
	cgroupHelpers,
	sockMapHelpers,
	syscallHelpers,
}

// Table is a set of helpers by id and variant.
type Table struct {
	byID map[variantKey]*Helper
}

type variantKey struct {
	id      int32
	variant string
}

// Builtin returns the table of every helper bpfvm implements. It is built
// once and never changes.
var Builtin = sync.OnceValue(func() *Table {
	t := &Table{byID: make(map[variantKey]*Helper)}
	for _, fam := range families {
		for i := range fam {
			h := &fam[i]
			id, ok := isa.HelperID(h.Proto.Name)
			if !ok {
				panic("helper: unknown kernel helper " + h.Proto.Name)
			}
			k := variantKey{id, h.Variant}
			if t.byID[k] != nil {
				panic("helper: " + h.Proto.Name + " defined twice")
			}
			h.ID = id
			t.byID[k] = h
		}
	}
	return t
})

// Lookup returns the main variant of the helper with kernel id id, or nil.
func (t *Table) Lookup(id int32) *Helper { return t.byID[variantKey{id, ""}] }

// LookupVariant returns a variant of the helper with kernel id id, or nil.
func (t *Table) LookupVariant(id int32, variant string) *Helper {
	return t.byID[variantKey{id, variant}]
}

// Proto returns the prototype of helper id's main variant, or nil: what
// verifier.Options.Helpers takes.
func (t *Table) Proto(id int32) *Proto {
	if h := t.Lookup(id); h != nil {
		return &h.Proto
	}
	return nil
}

// Func returns the implementation of helper id's main variant, or nil.
func (t *Table) Func(id int32) vm.Helper {
	if h := t.Lookup(id); h != nil {
		return h.Func
	}
	return nil
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

// mapArg resolves a map handle argument. In checked mode the handle comes
// from an unverified program and is validated.
func mapArg(e *vm.Env, handle uint64) (maps.Map, error) {
	if e.Checked {
		// Most handles are the program's own maps: check those without
		// the process-wide table.
		if r, ok := e.Value.(*runner.Runner); ok {
			if m := r.OwnMap(handle); m != nil {
				return m, nil
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

// mapArgOf is mapArg for a helper that takes maps of one kind only (the
// verifier checked the type): an unverified program passing another fails
// the run.
func mapArgOf[T maps.Map](e *vm.Env, handle uint64, helper string) (T, error) {
	var t T
	m, err := mapArg(e, handle)
	if err != nil {
		return t, err
	}
	t, ok := m.(T)
	if !ok {
		return t, fmt.Errorf("%w: %s on a %s", vm.ErrHelper, helper, m.Spec().Type)
	}
	return t, nil
}

// grantMap lets a checked run access the values of m, a map it reached at
// run time (runner.Runner.GrantMap).
func grantMap(e *vm.Env, m maps.Map) {
	if r, ok := e.Value.(*runner.Runner); ok {
		r.GrantMap(e, m)
	}
}

// Set is the helpers of one program: host helpers, by id, in front of the
// built-in ones. A host helper replaces a built-in one of the same id
// entirely: its prototype, and no inlining or native routine.
type Set struct {
	// Host are the host's helpers by id.
	Host map[int32]vm.Helper
	// Protos are the prototypes the verifier checks calls by, for host
	// helpers and to replace a built-in helper's.
	Protos map[int32]*Proto
	// NoNatives serves every helper from Go, for measuring.
	NoNatives bool
	// Type is the program's type, whose helper set chooses among a
	// helper's variants (nil: the main ones).
	Type *progtype.Type
}

// Lookup returns the built-in helper id stands for in the program's type,
// nil when the host replaces it or there is none.
func (s *Set) Lookup(id int32) *Helper {
	if _, ok := s.Host[id]; ok {
		return nil
	}
	return Builtin().LookupVariant(id, s.Type.HelperVariant(id))
}

// Func returns the implementation of id: the host's, a kfunc's for its
// internal id (ToHelperCalls), the built-in helper's, or nil.
func (s *Set) Func(id int32) vm.Helper {
	if h, ok := s.Host[id]; ok {
		return h
	}
	if isa.IsKfuncHelper(id) {
		if k := LookupKfunc(id - isa.KfuncHelperBase); k != nil {
			return k.Func
		}
		return nil
	}
	if h := s.Lookup(id); h != nil {
		return h.Func
	}
	return nil
}

// Proto returns the prototype the verifier checks calls of id by, or nil
// when they cannot be verified (a host helper without one).
func (s *Set) Proto(id int32) *Proto {
	if p, ok := s.Protos[id]; ok {
		return p
	}
	if h := s.Lookup(id); h != nil {
		return &h.Proto
	}
	return nil
}

// Native returns the native routine JIT code calls for id, if any.
func (s *Set) Native(id int32) vm.Native {
	if h := s.Lookup(id); h != nil && !s.NoNatives {
		return h.Native
	}
	return vm.NoNative
}
