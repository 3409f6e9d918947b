package helper

import (
	"fmt"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// Kfunc is a kernel function (kfunc) as bpfvm implements it, found by its
// BTF name. The engines call it as a helper with an internal id
// (isa.KfuncHelperBase + its isa.Kfunc id): see ToHelperCalls.
type Kfunc struct {
	// Name is the kernel's BTF name.
	Name string
	// ID is bpfvm's id for it (isa.Kfunc*), what calls carry in their
	// immediate once loaded.
	ID int32
	// Func implements it.
	Func vm.Helper
}

// kfuncs are the kfuncs bpfvm implements: the open-coded number iterator
// (kernel/bpf/bpf_iter.c) and the casts to kernel types
// (kernel/bpf/helpers.c). The verifier knows their rules
// (verifier/kfunc.go).
var kfuncs = []Kfunc{
	{Name: "bpf_iter_num_new", ID: isa.KfuncIterNumNew, Func: kfuncIterNumNew},
	{Name: "bpf_iter_num_next", ID: isa.KfuncIterNumNext, Func: kfuncIterNumNext},
	{Name: "bpf_iter_num_destroy", ID: isa.KfuncIterNumDestroy, Func: kfuncIterNumDestroy},
	{Name: "bpf_cast_to_kern_ctx", ID: isa.KfuncCastToKernCtx, Func: kfuncCast},
	{Name: "bpf_rdonly_cast", ID: isa.KfuncRdonlyCast, Func: kfuncCast},
	{Name: "bpf_throw", ID: isa.KfuncThrow, Func: kfuncThrow},                       // throw.go
	{Name: "bpf_arena_alloc_pages", ID: isa.KfuncArenaAlloc, Func: kfuncArenaAlloc}, // arena.go
	{Name: "bpf_arena_free_pages", ID: isa.KfuncArenaFree, Func: kfuncArenaFree},
}

// kfuncCast is bpf_cast_to_kern_ctx(ctx) and bpf_rdonly_cast(obj, btf_id):
// the pointer itself, which only the verifier sees with a new type (the
// kernel replaces the calls with r0 = r1). Loads through what they give
// are probe loads (verifier.InsnAux.Probe): the context's bytes where the
// kernel object's fields would be, 0 outside what the run may read.
func kfuncCast(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) { return r1, nil }

// LookupKfunc returns the kfunc with bpfvm id id, or nil.
func LookupKfunc(id int32) *Kfunc {
	for i := range kfuncs {
		if kfuncs[i].ID == id {
			return &kfuncs[i]
		}
	}
	return nil
}

// iterNumSize is the size of struct bpf_iter_num: two 32-bit ints, the
// current value and the end, as the kernel's struct bpf_iter_num_kern.
const iterNumSize = 8

// iterNumState returns the iterator at addr, checked in checked mode.
func iterNumState(e *vm.Env, addr uint64) (*[2]int32, error) {
	if err := e.Check(addr, iterNumSize, true); err != nil {
		return nil, err
	}
	return (*[2]int32)(vm.Ptr(addr)), nil
}

// kfuncIterNumNew is bpf_iter_num_new(it, start, end): an iterator over
// [start, end), or an empty one and -EINVAL when start > end, -E2BIG when
// the range is longer than BPF_MAX_LOOPS.
func kfuncIterNumNew(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	s, err := iterNumState(e, r1)
	if err != nil {
		return 0, err
	}
	start, end := int32(r2), int32(r3)
	switch {
	case start > end:
		s[0], s[1] = 0, 0
		return neg(einval), nil
	case int64(end)-int64(start) > maxLoops:
		s[0], s[1] = 0, 0
		return neg(e2big), nil
	}
	// next increments first; the wrap at INT_MIN is undone by it.
	s[0], s[1] = start-1, end
	return 0, nil
}

// kfuncIterNumNext is bpf_iter_num_next(it): a pointer to the next value,
// or NULL (and an exhausted iterator) at the end. rewrite.InlineIterNext
// emits the same steps inline.
func kfuncIterNumNext(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	s, err := iterNumState(e, r1)
	if err != nil {
		return 0, err
	}
	next := s[0] + 1 // int arithmetic, wrapping as the kernel's does
	if next >= s[1] {
		s[0], s[1] = 0, 0
		return 0, nil
	}
	s[0] = next
	return r1, nil
}

// kfuncIterNumDestroy is bpf_iter_num_destroy(it).
func kfuncIterNumDestroy(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	s, err := iterNumState(e, r1)
	if err != nil {
		return 0, err
	}
	s[0], s[1] = 0, 0
	return 0, nil
}

// kfuncName names a kfunc id in errors.
func kfuncName(id int32) string {
	if name := isa.KfuncName(id); name != "" {
		return fmt.Sprintf("%s#%d", name, id)
	}
	return fmt.Sprintf("#%d", id)
}

// CheckKfuncs rejects calls of kfunc ids bpfvm does not implement and
// helper calls of the internal ids kfuncs run under.
func CheckKfuncs(insns []isa.Instruction) error {
	for pc, ins := range insns {
		if ins.Op != isa.OpCall {
			continue
		}
		switch uint8(ins.Src) {
		case isa.CallKfunc:
			if LookupKfunc(ins.Imm) == nil {
				return fmt.Errorf("insn %d: %w kfunc %s", pc, vm.ErrHelper, kfuncName(ins.Imm))
			}
		case isa.CallHelper:
			if isa.IsKfuncHelper(ins.Imm) {
				return fmt.Errorf("insn %d: %w %s", pc, vm.ErrHelper, isa.HelperLabel(ins.Imm))
			}
		}
	}
	return nil
}

// ToHelperCalls turns kfunc calls into calls of their internal helper ids,
// in place, once the verifier is done with them.
func ToHelperCalls(insns []isa.Instruction) {
	for pc := range insns {
		ins := &insns[pc]
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) {
			*ins = isa.Instruction{Op: isa.OpCall, Src: isa.Register(isa.CallHelper), Imm: isa.KfuncHelperBase + ins.Imm}
		}
	}
}
