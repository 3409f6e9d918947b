package helper

import "github.com/bpfvm/bpfvm/vm"

// iterKfuncs are the open-coded number iterator's (kernel/bpf/bpf_iter.c,
// in helpers.c's common set).
var iterKfuncs = []Kfunc{
	{Name: "bpf_iter_num_new", Decl: "int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end)", Flags: KfIterNew, Hooks: HookCommon, Func: kfuncIterNumNew},
	{Name: "bpf_iter_num_next", Decl: "int *bpf_iter_num_next(struct bpf_iter_num *it)", Flags: KfIterNext | KfRetNull, Hooks: HookCommon, Func: kfuncIterNumNext},
	{Name: "bpf_iter_num_destroy", Decl: "void bpf_iter_num_destroy(struct bpf_iter_num *it)", Flags: KfIterDestroy, Hooks: HookCommon, Func: kfuncIterNumDestroy},
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
