package helper

import (
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// taskKfuncs acquire and release tasks (kernel/bpf/helpers.c's generic
// set). Tasks are the world's (runner.Trace): the kernel's, whose
// lifetime a run does not change, so acquiring one gives the same
// pointer and releasing it does nothing bpfvm can see; the verifier
// checks that every reference is released or stored.
var taskKfuncs = []Kfunc{
	{Name: "bpf_task_acquire", Decl: "struct task_struct *bpf_task_acquire(struct task_struct *p)", Flags: KfAcquire | KfRCU | KfRetNull, Hooks: HooksGeneric, Func: kfuncTaskAcquire},
	{Name: "bpf_task_release", Decl: "void bpf_task_release(struct task_struct *p)", Flags: KfRelease, Hooks: HooksGeneric, Func: kfuncNop},
	{Name: "bpf_task_from_pid", Decl: "struct task_struct *bpf_task_from_pid(s32 pid)", Flags: KfAcquire | KfRetNull, Hooks: HooksGeneric, Func: kfuncTaskFromPid},
	{Name: "bpf_task_from_vpid", Decl: "struct task_struct *bpf_task_from_vpid(s32 vpid)", Flags: KfAcquire | KfRetNull, Hooks: HooksGeneric, Func: kfuncTaskFromPid},
}

// kfuncTaskAcquire is bpf_task_acquire(p): p, with a reference.
func kfuncTaskAcquire(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) { return r1, nil }

// kfuncTaskFromPid is bpf_task_from_pid(pid) and bpf_task_from_vpid: the
// task with that pid, referenced, or NULL. The world knows one task, the
// current one (Trace.TaskStruct), found by its pid.
func kfuncTaskFromPid(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	t, host := r.Task()
	if host {
		t.PID = threadID()
	}
	addr := r.Trace().TaskStruct
	if addr == 0 || int32(r1) != int32(t.PID) {
		return 0, nil
	}
	return addr, nil
}
