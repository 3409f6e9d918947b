package helper

import "github.com/bpfvm/bpfvm/vm"

// rcuKfuncs are RCU read sections and preemption (kernel/bpf/helpers.c's
// common set). Programs run inside an RCU read section and on one CPU
// already; the verifier checks the sections' nesting and what may be used
// in them (verifier/kfunc.go), so at run time they do nothing.
var rcuKfuncs = []Kfunc{
	{Name: "bpf_rcu_read_lock", Decl: "void bpf_rcu_read_lock(void)", Hooks: HookCommon, Func: kfuncNop},
	{Name: "bpf_rcu_read_unlock", Decl: "void bpf_rcu_read_unlock(void)", Hooks: HookCommon, Func: kfuncNop},
	{Name: "bpf_preempt_disable", Decl: "void bpf_preempt_disable(void)", Hooks: HookCommon, Func: kfuncNop},
	{Name: "bpf_preempt_enable", Decl: "void bpf_preempt_enable(void)", Hooks: HookCommon, Func: kfuncNop},
}

// kfuncNop is a kfunc with nothing to do at run time.
func kfuncNop(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) { return 0, nil }
