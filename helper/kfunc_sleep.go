package helper

import (
	"github.com/bpfvm/bpfvm/vm"
)

// sleepKfuncs are the sleepable kfuncs of kernel/bpf/helpers.c's common
// set (every program type) (KF_SLEEPABLE: only sleepable programs call them, outside RCU and
// preemption sections): strings from the world's user memory, which
// every task shares (runner.Trace.Memory).
var sleepKfuncs = []Kfunc{
	{Name: "bpf_copy_from_user_str", Decl: "int bpf_copy_from_user_str(void *dst, u32 dst__sz, const void *unsafe_ptr__ign, u64 flags)",
		Flags: KfSleepable, Hooks: HookCommon, Func: kfuncCopyFromUserStr},
	{Name: "bpf_copy_from_user_task_str", Decl: "int bpf_copy_from_user_task_str(void *dst, u32 dst__sz, const void *unsafe_ptr__ign, struct task_struct *tsk, u64 flags)",
		Flags: KfSleepable, Hooks: HookCommon, Func: kfuncCopyFromUserTaskStr},
}

// padZeros is BPF_F_PAD_ZEROS, the one flag of the string copies.
const padZeros = 1

// kfuncCopyFromUserStr is bpf_copy_from_user_str(dst, dst__sz, ptr,
// flags): flags other than BPF_F_PAD_ZEROS are -EINVAL, a size of 0 is
// 0; otherwise the string at ptr, at most dst__sz-1 bytes of it and a
// NUL, and its length with the NUL; with BPF_F_PAD_ZEROS the rest of dst
// is zeroed (all of it when the read fails, -EFAULT).
func kfuncCopyFromUserStr(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	return copyUserStr(e, r1, uint32(r2), r3, r4)
}

// kfuncCopyFromUserTaskStr is bpf_copy_from_user_task_str(dst, dst__sz,
// ptr, task, flags): bpf_copy_from_user_str of the task's memory, the
// world's one user address space.
func kfuncCopyFromUserTaskStr(e *vm.Env, r1, r2, r3, _, r5 uint64) (uint64, error) {
	return copyUserStr(e, r1, uint32(r2), r3, r5)
}

func copyUserStr(e *vm.Env, dstAddr uint64, size uint32, src, flags uint64) (uint64, error) {
	if _, err := memArg(e, dstAddr, size, true); err != nil {
		return 0, err
	}
	if flags&^padZeros != 0 {
		return neg(einval), nil
	}
	if size == 0 {
		return 0, nil
	}
	dst := vm.Slice(dstAddr, uint64(size))
	ret := probeStr(e, dst, src, true)
	if int64(ret) < 0 {
		if flags&padZeros != 0 {
			clear(dst)
		}
		return uint64(int64(int32(ret))), nil
	}
	if flags&padZeros != 0 {
		clear(dst[ret:])
	}
	return ret, nil
}
