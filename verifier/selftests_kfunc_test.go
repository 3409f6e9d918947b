package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/fieldbtf"
	"github.com/bpfvm/bpfvm/maps"
)

// Kfuncs checked by the generic mechanism (kfunc.go, kfuncargs.go): the
// task, cgroup and cpumask families, RCU sections and preemption, against
// the running kernel, from tp_btf/task_newtask (whose task argument is
// trusted) and fentry (whose arguments are not).
func TestSelftestKfuncs(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("host BTF: %v", err)
	}
	task, _ := hostStruct(t, spec, "task_struct")
	parentOff := memberOff(t, task, "parent")
	realParentOff := memberOff(t, task, "real_parent")
	cpusPtrOff := memberOff(t, task, "cpus_ptr")

	tp := func(c vcase) vcase {
		c.typ, c.attach, c.attachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, "task_newtask"
		if c.err != "" && c.klog == "" {
			c.kmsg = true
		}
		return c
	}
	const (
		ctxTask = "r1 = *(u64 *)(r1 +0)\n"
		acquire = ctxTask + "call bpf_task_acquire#0\n"
		release = "r1 = r0\ncall bpf_task_release#0\n"
		ret0    = "r0 = 0\nexit\n"
		out     = "out: r0 = 0\nexit\n"
		create  = "call bpf_cpumask_create#0\n"
	)
	cases := []vcase{
		// Tasks.
		tp(vcase{name: "task acquire release", asm: acquire + "if r0 == 0 goto out\n" + release + out}),
		tp(vcase{name: "task acquire leak", asm: acquire + "if r0 == 0 goto out\n" + out, err: "Unreleased reference id=", klog: "Unreleased reference id="}),
		tp(vcase{name: "task acquire leak exact", asm: acquire + ret0, err: "Unreleased reference id=2 alloc_insn=1"}),
		tp(vcase{name: "task release unchecked", asm: acquire + release + ret0, err: "Possibly NULL pointer passed to trusted arg0"}),
		tp(vcase{name: "task release unacquired", asm: ctxTask + "call bpf_task_release#0\n" + ret0, err: "release kernel function bpf_task_release expects refcounted PTR_TO_BTF_ID"}),
		tp(vcase{name: "task acquire null", asm: "r1 = 0\ncall bpf_task_acquire#0\n" + ret0, err: "Possibly NULL pointer passed to trusted arg0"}),
		tp(vcase{name: "task acquire stack", asm: "r1 = r10\nr1 += -8\ncall bpf_task_acquire#0\n" + ret0, err: "arg#0 pointer type STRUCT task_struct must point to scalar, or struct with scalar"}),
		tp(vcase{name: "task acquire scalar", asm: "r1 = 7\ncall bpf_task_acquire#0\n" + ret0, err: "arg#0 pointer type STRUCT task_struct must point to scalar, or struct with scalar"}),
		tp(vcase{name: "task acquire walked", asm: ctxTask + fmt.Sprintf("r1 = *(u64 *)(r1 +%d)\n", parentOff) + "call bpf_task_acquire#0\n" + ret0, err: "R1 must be a rcu pointer"}),
		tp(vcase{name: "task acquire rcu", asm: ctxTask + fmt.Sprintf("r1 = *(u64 *)(r1 +%d)\n", realParentOff) + "call bpf_task_acquire#0\nif r0 == 0 goto out\n" + release + out}),
		tp(vcase{name: "task acquire moved", asm: ctxTask + "r1 += 8\ncall bpf_task_acquire#0\nif r0 == 0 goto out\n" + release + out, err: "kernel function bpf_task_acquire args#0 expected pointer to STRUCT task_struct but R1 has a pointer to STRUCT task_struct"}),
		tp(vcase{name: "task release moved", asm: acquire + "if r0 == 0 goto out\nr0 += 8\n" + release + out, err: "R1 must have zero offset when passed to release func or trusted arg to kfunc"}),
		tp(vcase{name: "task use after release", asm: acquire + "if r0 == 0 goto out\nr6 = r0\n" + release + "r0 = *(u32 *)(r6 +0)\n" + out, err: "R6 invalid mem access 'scalar'"}),
		tp(vcase{name: "task double release", asm: acquire + "if r0 == 0 goto out\nr6 = r0\n" + release + "r1 = r6\ncall bpf_task_release#0\n" + out, err: "arg#0 pointer type STRUCT task_struct must point to scalar, or struct with scalar"}),
		tp(vcase{name: "task from pid", asm: "r1 = 1\ncall bpf_task_from_pid#0\nif r0 == 0 goto out\n" + release + out}),
		tp(vcase{name: "task from pid pointer", asm: "r1 = r10\ncall bpf_task_from_pid#0\n" + ret0, err: "R1 is not a scalar"}),
		tp(vcase{name: "task from vpid leak", asm: "r1 = 1\ncall bpf_task_from_vpid#0\nif r0 == 0 goto out\n" + out, err: "Unreleased reference id=", klog: "Unreleased reference id="}),
		tp(vcase{name: "current task btf acquire", asm: "call bpf_get_current_task_btf#158\nr1 = r0\ncall bpf_task_acquire#0\nif r0 == 0 goto out\n" + release + out}),
		{name: "task acquire fentry arg", typ: ebpf.Tracing, attach: ebpf.AttachTraceFEntry, attachTo: "__put_task_struct", asm: acquire + ret0, err: "R1 must be a rcu pointer", kmsg: true},
		{name: "task kfunc socket filter", typ: ebpf.SocketFilter, btf: true, asm: "r1 = 1\ncall bpf_task_from_pid#0\n" + ret0, err: "calling kernel function bpf_task_from_pid is not allowed", kmsg: true},
		{name: "task kfunc kprobe", typ: ebpf.Kprobe, btf: true, asm: "r1 = 1\ncall bpf_task_from_pid#0\n" + ret0, err: "calling kernel function bpf_task_from_pid is not allowed", kmsg: true},
		{name: "task kfunc xdp", typ: ebpf.XDP, btf: true, asm: "r1 = 1\ncall bpf_task_from_pid#0\nif r0 == 0 goto out\n" + release + out},

		// Cgroups.
		tp(vcase{name: "cgroup from id", asm: "r1 = 1\ncall bpf_cgroup_from_id#0\nif r0 == 0 goto out\nr1 = r0\ncall bpf_cgroup_release#0\n" + out}),
		tp(vcase{name: "cgroup ancestor", asm: "r1 = 1\ncall bpf_cgroup_from_id#0\nif r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = 0\ncall bpf_cgroup_ancestor#0\nif r0 == 0 goto rel\nr1 = r0\ncall bpf_cgroup_release#0\nrel: r1 = r6\ncall bpf_cgroup_release#0\n" + out}),
		tp(vcase{name: "cgroup ancestor leak", asm: "r1 = 1\ncall bpf_cgroup_from_id#0\nif r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = 0\ncall bpf_cgroup_ancestor#0\nr1 = r6\ncall bpf_cgroup_release#0\n" + out, err: "Unreleased reference id=", klog: "Unreleased reference id="}),
		tp(vcase{name: "cgroup release task", asm: acquire + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_cgroup_release#0\n" + release + out, err: "kernel function bpf_cgroup_release args#0 expected pointer to STRUCT cgroup but R1 has a pointer to STRUCT task_struct"}),
		tp(vcase{name: "task under cgroup ok", asm: "r7 = *(u64 *)(r1 +0)\nr1 = 1\ncall bpf_cgroup_from_id#0\nif r0 == 0 goto out\nr6 = r0\nr2 = r0\nr1 = r7\ncall bpf_task_under_cgroup#0\nr1 = r6\ncall bpf_cgroup_release#0\n" + out}),
		tp(vcase{name: "task under cgroup null", asm: "r7 = *(u64 *)(r1 +0)\nr2 = 0\nr1 = r7\ncall bpf_task_under_cgroup#0\n" + out, err: "Possibly NULL pointer passed to trusted arg1"}),

		// Cpumasks.
		tp(vcase{name: "cpumask create release", asm: create + "if r0 == 0 goto out\nr6 = r0\nr1 = 0\nr2 = r0\ncall bpf_cpumask_set_cpu#0\nr1 = 0\nr2 = r6\ncall bpf_cpumask_test_cpu#0\nr1 = r6\ncall bpf_cpumask_release#0\n" + out}),
		tp(vcase{name: "cpumask create leak", asm: create + "if r0 == 0 goto out\n" + out, err: "Unreleased reference id=", klog: "Unreleased reference id="}),
		tp(vcase{name: "cpumask unchecked", asm: create + "r1 = 0\nr2 = r0\ncall bpf_cpumask_set_cpu#0\n" + ret0, err: "Possibly NULL pointer passed to trusted arg1"}),
		tp(vcase{name: "cpumask acquire", asm: create + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_cpumask_acquire#0\nr1 = r0\ncall bpf_cpumask_release#0\nr1 = r6\ncall bpf_cpumask_release#0\n" + out}),
		tp(vcase{name: "cpumask first of task", asm: ctxTask + fmt.Sprintf("r1 = *(u64 *)(r1 +%d)\n", cpusPtrOff) + "call bpf_cpumask_first#0\n" + ret0}),
		tp(vcase{name: "cpumask first of stack", asm: "r1 = 0\n*(u64 *)(r10 -8) = r1\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -24) = r1\n*(u64 *)(r10 -32) = r1\nr1 = r10\nr1 += -32\ncall bpf_cpumask_first#0\n" + ret0}),
		tp(vcase{name: "cpumask first of short stack", asm: "r1 = 0\n*(u64 *)(r10 -8) = r1\nr1 = r10\nr1 += -8\ncall bpf_cpumask_first#0\n" + ret0, err: "invalid write to stack R1 off=-8 size=32", klog: "invalid"}),
		tp(vcase{name: "cpumask set task mask", asm: ctxTask + fmt.Sprintf("r2 = *(u64 *)(r1 +%d)\n", cpusPtrOff) + "r1 = 0\ncall bpf_cpumask_set_cpu#0\n" + ret0, err: "kernel function bpf_cpumask_set_cpu args#1 expected pointer to STRUCT bpf_cpumask but R2 has a pointer to STRUCT cpumask"}),
		tp(vcase{name: "cpumask and", asm: create + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = r0\nr3 = r0\ncall bpf_cpumask_and#0\nr1 = r6\ncall bpf_cpumask_weight#0\nr1 = r6\ncall bpf_cpumask_release#0\n" + out}),
		tp(vcase{name: "cpumask populate", asm: "r1 = 0\n*(u64 *)(r10 -8) = r1\n" + create + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = r10\nr2 += -8\nr3 = 8\ncall bpf_cpumask_populate#0\nr1 = r6\ncall bpf_cpumask_release#0\n" + out}),
		tp(vcase{name: "cpumask populate too long", asm: "r1 = 0\n*(u64 *)(r10 -8) = r1\n" + create + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = r10\nr2 += -8\nr3 = 16\ncall bpf_cpumask_populate#0\nr1 = r6\ncall bpf_cpumask_release#0\n" + out, err: "invalid", klog: "invalid"}),
		{name: "cpumask xdp", typ: ebpf.XDP, btf: true, asm: create + ret0, err: "calling kernel function bpf_cpumask_create is not allowed", kmsg: true},

		// RCU sections and preemption.
		tp(vcase{name: "rcu lock unlock", asm: "call bpf_rcu_read_lock#0\ncall bpf_rcu_read_unlock#0\n" + ret0}),
		tp(vcase{name: "rcu nested", asm: "call bpf_rcu_read_lock#0\ncall bpf_rcu_read_lock#0\ncall bpf_rcu_read_unlock#0\ncall bpf_rcu_read_unlock#0\n" + ret0, err: "nested rcu read lock (kernel function bpf_rcu_read_lock)"}),
		tp(vcase{name: "rcu unmatched", asm: "call bpf_rcu_read_unlock#0\n" + ret0, err: "unmatched rcu read unlock (kernel function bpf_rcu_read_unlock)"}),
		tp(vcase{name: "rcu exit locked", asm: "call bpf_rcu_read_lock#0\n" + ret0, err: "BPF_EXIT instruction in main prog cannot be used inside bpf_rcu_read_lock-ed region"}),
		tp(vcase{name: "rcu pointer after unlock", asm: "r6 = *(u64 *)(r1 +0)\ncall bpf_rcu_read_lock#0\n" + fmt.Sprintf("r1 = *(u64 *)(r6 +%d)\n", realParentOff) + "r7 = r1\ncall bpf_rcu_read_unlock#0\nr1 = r7\ncall bpf_task_acquire#0\nif r0 == 0 goto out\n" + release + out, err: "R1 must be a rcu pointer"}),
		tp(vcase{name: "rcu pointer inside", asm: "r6 = *(u64 *)(r1 +0)\ncall bpf_rcu_read_lock#0\n" + fmt.Sprintf("r1 = *(u64 *)(r6 +%d)\n", realParentOff) + "call bpf_task_acquire#0\nr7 = r0\ncall bpf_rcu_read_unlock#0\nif r7 == 0 goto out\nr0 = r7\n" + release + out}),
		tp(vcase{name: "preempt", asm: "call bpf_preempt_disable#0\ncall bpf_preempt_disable#0\ncall bpf_preempt_enable#0\ncall bpf_preempt_enable#0\n" + ret0}),
		tp(vcase{name: "preempt unmatched", asm: "call bpf_preempt_enable#0\n" + ret0, err: "unmatched attempt to enable preemption (kernel function bpf_preempt_enable)"}),
		tp(vcase{name: "preempt exit disabled", asm: "call bpf_preempt_disable#0\n" + ret0, err: "BPF_EXIT instruction in main prog cannot be used inside bpf_preempt_disable-ed region"}),
		{name: "rcu socket filter", btf: true, asm: "call bpf_rcu_read_lock#0\ncall bpf_rcu_read_unlock#0\n" + ret0},
	}
	// bpf_kptr_xchg on kptrArr (task_struct: untrusted at 0, referenced
	// at 8) and a referenced cpumask kptr.
	kp := []maps.Spec{kptrArr}
	cm := []maps.Spec{{Name: "cm", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Value: fValue(16, 0, fieldbtf.Tagged("kptr", &btf.Struct{Name: "bpf_cpumask"}), 8, fU64)}}
	const (
		// r6 = an acquired task (null-checked), r7 = the map value.
		taskAndValue = "r6 = *(u64 *)(r1 +0)\nr1 = r6\ncall bpf_task_acquire#0\nif r0 == 0 goto out\nr6 = r0\n" + lookup4 + "if r0 != 0 goto have\nr1 = r6\ncall bpf_task_release#0\ngoto out\nhave: r7 = r0\n"
		xchgIn       = "r1 = r7\nr1 += 8\nr2 = r6\ncall bpf_kptr_xchg#194\n"
		releaseOld   = "if r0 == 0 goto out\nr1 = r0\ncall bpf_task_release#0\n"
	)
	cases = append(cases,
		tp(vcase{name: "kptr xchg in", maps: kp, asm: taskAndValue + xchgIn + releaseOld + out}),
		tp(vcase{name: "kptr xchg old leaked", maps: kp, asm: taskAndValue + xchgIn + out, err: "Unreleased reference id=", klog: "Unreleased reference id="}),
		tp(vcase{name: "kptr xchg use after", maps: kp, asm: taskAndValue + xchgIn + "r0 = *(u32 *)(r6 +0)\n" + out, err: "R6 invalid mem access 'scalar'"}),
		tp(vcase{name: "kptr xchg out", maps: kp, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nr1 += 8\nr2 = 0\ncall bpf_kptr_xchg#194\n" + releaseOld + out}),
		tp(vcase{name: "kptr xchg untrusted field", maps: kp, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nr2 = 0\ncall bpf_kptr_xchg#194\n" + releaseOld + out, err: "off=0 kptr isn't referenced kptr"}),
		tp(vcase{name: "kptr xchg not kptr", maps: kp, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nr1 += 16\nr2 = 0\ncall bpf_kptr_xchg#194\n" + releaseOld + out, err: "off=16 doesn't point to kptr"}),
		tp(vcase{name: "kptr xchg no kptr map", maps: []maps.Spec{arrayMap}, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nr2 = 0\ncall bpf_kptr_xchg#194\n" + releaseOld + out, err: "map 'arr' has to have BTF in order to use bpf_kptr_xchg", klog: "has to have BTF in order to use bpf_kptr_xchg"}),
		tp(vcase{name: "kptr xchg unreferenced", maps: kp, asm: "r6 = *(u64 *)(r1 +0)\n" + lookup4 + "if r0 == 0 goto out\nr1 = r0\nr1 += 8\nr2 = r6\ncall bpf_kptr_xchg#194\n" + releaseOld + out, err: "R2 must be referenced when passed to release function"}),
		tp(vcase{name: "kptr xchg wrong type", maps: cm, asm: taskAndValue + "r1 = r7\nr2 = r6\ncall bpf_kptr_xchg#194\n" + out, err: "invalid kptr access, R2 type=ptr_task_struct expected=ptr_bpf_cpumask"}),
		tp(vcase{name: "kptr xchg cpumask", maps: cm, asm: create + "if r0 == 0 goto out\nr6 = r0\n" + lookup4 + "if r0 != 0 goto have\nr1 = r6\ncall bpf_cpumask_release#0\ngoto out\nhave: r1 = r0\nr2 = r6\ncall bpf_kptr_xchg#194\nif r0 == 0 goto out\nr1 = r0\ncall bpf_cpumask_release#0\n" + out}),
		tp(vcase{name: "kptr rcu load released", maps: cm, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nif r1 == 0 goto out\ncall bpf_cpumask_release#0\n" + out, err: "R1 must be referenced or trusted"}),
		tp(vcase{name: "kptr rcu load acquire", maps: cm, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nif r1 == 0 goto out\ncall bpf_cpumask_acquire#0\nr1 = r0\ncall bpf_cpumask_release#0\n" + out, err: "R1 must be referenced or trusted"}),
		tp(vcase{name: "kptr after rcu unlock", maps: cm, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_rcu_read_lock#0\nr2 = *(u64 *)(r6 +0)\nr7 = r2\ncall bpf_rcu_read_unlock#0\nif r7 == 0 goto out\nr2 = r7\nr1 = 1\ncall bpf_cpumask_set_cpu#0\n" + out, err: "R2 must be a rcu pointer"}),
		tp(vcase{name: "kptr xchg variable offset", maps: kp, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +16)\nr1 &= 8\nr1 += r0\nr2 = 0\ncall bpf_kptr_xchg#194\n" + releaseOld + out, err: "R1 doesn't have constant offset. kptr has to be at the constant offset"}),
		tp(vcase{name: "cpumask acquire task mask", asm: ctxTask + fmt.Sprintf("r1 = *(u64 *)(r1 +%d)\n", cpusPtrOff) + "call bpf_cpumask_acquire#0\nr1 = r0\ncall bpf_cpumask_release#0\n" + ret0, err: "R1 must be referenced or trusted"}),
		tp(vcase{name: "cgroup acquire null", asm: "r1 = 0\ncall bpf_cgroup_acquire#0\n" + ret0, err: "Possibly NULL pointer passed to trusted arg0"}),
		tp(vcase{name: "cgroup from id pointer", asm: "r1 = r10\ncall bpf_cgroup_from_id#0\n" + ret0, err: "R1 is not a scalar"}),
		tp(vcase{name: "cgroup ancestor pointer level", asm: "r1 = 1\ncall bpf_cgroup_from_id#0\nif r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = r10\ncall bpf_cgroup_ancestor#0\n" + out, err: "R2 is not a scalar"}),
		tp(vcase{name: "leak inside rcu", asm: acquire + "call bpf_rcu_read_lock#0\n" + ret0, err: "Unreleased reference id=2 alloc_insn=1"}),
		tp(vcase{name: "task from pid inside rcu", asm: "call bpf_rcu_read_lock#0\nr1 = 1\ncall bpf_task_from_pid#0\nr6 = r0\ncall bpf_rcu_read_unlock#0\nif r6 == 0 goto out\nr0 = r6\n" + release + out}),
		tp(vcase{name: "kptr rcu load cpumask", maps: cm, asm: lookup4 + "if r0 == 0 goto out\nr2 = *(u64 *)(r0 +0)\nif r2 == 0 goto out\nr1 = 3\ncall bpf_cpumask_set_cpu#0\n" + out}),
	)
	runCases(t, cases)
}
