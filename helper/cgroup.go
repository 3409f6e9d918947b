package helper

import (
	"fmt"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// cgroupHelpers answer from the cgroups of the host's world
// (runner.Net.Cgroups): a cgroup program's storage (kernel/bpf/helpers.c),
// and whether the packet's socket or the current task is under a cgroup
// of a cgroup array (net/core/filter.c, kernel/bpf/helpers.c).
var cgroupHelpers = []Helper{
	{Proto: Proto{Name: "bpf_get_local_storage", Args: [5]ArgType{ArgConstMapPtr, ArgAnything}, Ret: RetMapValue}, Func: helperGetLocalStorage},
	{Proto: Proto{Name: "bpf_skb_under_cgroup", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything}}, Func: skbOnly(helperSkbUnderCgroup)},
	{Proto: Proto{Name: "bpf_current_task_under_cgroup", Args: [5]ArgType{ArgConstMapPtr, ArgAnything}}, Func: helperCurrentTaskUnderCgroup},
	{Proto: Proto{Name: "bpf_get_retval"}, Func: helperGetRetval},
	{Proto: Proto{Name: "bpf_set_retval", Args: [5]ArgType{ArgAnything}}, Func: helperSetRetval},
}

// helperGetRetval is bpf_get_retval(): the return value the hook's
// syscall will give, as the programs before in the run set it
// (kernel/bpf/cgroup.c's bpf_cg_run_ctx.retval); 0 at the start of a
// run, sign-extended from the kernel's int.
func helperGetRetval(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return uint64(int64(runner.Of(e).CgroupRetval())), nil
}

// helperSetRetval is bpf_set_retval(retval): sets the syscall's return
// value to the low 32 bits of retval, for the rest of the run; returns 0.
func helperSetRetval(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	runner.Of(e).SetCgroupRetval(int32(r1))
	return 0, nil
}

// helperGetLocalStorage is bpf_get_local_storage(map, flags): the storage
// of the cgroup the program runs attached to (runner.Net.AttachCgroup)
// for its attach type, this CPU's for a per-CPU storage. The kernel's
// storage exists from the attachment on; bpfvm's from the first call,
// zeroed, and it stays in the map for the next runs (the kernel's test run
// gives every test run a storage of its own). The verifier requires flags
// 0 and the result is never NULL.
func helperGetLocalStorage(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	cs, err := mapArgOf[*maps.CgroupStorageMap](e, r1, "bpf_get_local_storage")
	if err != nil {
		return 0, err
	}
	cg, attach := runner.Of(e).AttachCgroup()
	p := cs.Storage(cg, attach, e.CPU)
	if p == nil {
		return 0, fmt.Errorf("%w: cgroup storage %s: no room for the storage of cgroup %d", vm.ErrHelper, cs.Spec().Name, cg)
	}
	if e.Checked {
		grantMap(e, cs)
	}
	return vm.Addr(p), nil
}

// cgroupAt is the cgroup id in slot idx of the cgroup array behind
// handle: -E2BIG out of range, -EAGAIN for an empty slot.
func cgroupAt(e *vm.Env, handle, idx uint64) (id uint64, errno uint64, err error) {
	ca, err := mapArgOf[*maps.CgroupArrayMap](e, handle, "a cgroup array helper")
	if err != nil {
		return 0, 0, err
	}
	i := uint32(idx)
	if i >= ca.Spec().MaxEntries {
		return 0, neg(e2big), nil
	}
	c, ok := ca.Cgroup(i)
	if !ok {
		return 0, neg(eagain), nil
	}
	return uint64(c), 0, nil
}

// helperSkbUnderCgroup is bpf_skb_under_cgroup(skb, map, idx): 1 if the
// cgroup of the packet's socket is the cgroup at idx of the cgroup array
// or one of its descendants, 0 if not; -ENOENT without a socket, then
// -E2BIG for an index out of range and -EAGAIN for an empty slot.
func helperSkbUnderCgroup(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	s := r.SkbSocket()
	if s == nil {
		return neg(enoent), nil
	}
	id, errno, err := cgroupAt(e, r2, r3)
	if err != nil || errno != 0 {
		return errno, err
	}
	return b2u(r.Net().UnderCgroup(s.CgroupID, id)), nil
}

// helperCurrentTaskUnderCgroup is bpf_current_task_under_cgroup(map, idx):
// whether the run's task (runner.Net.Cgroup) is under the cgroup at idx,
// with bpf_skb_under_cgroup's errors.
func helperCurrentTaskUnderCgroup(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	id, errno, err := cgroupAt(e, r1, r2)
	if err != nil || errno != 0 {
		return errno, err
	}
	r := runner.Of(e)
	return b2u(r.Net().UnderCgroup(r.TaskCgroup(), id)), nil
}

// b2u is 1 for true, 0 for false.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
