package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// TestSyscallPrograms compares the rules of BPF_PROG_TYPE_SYSCALL with the
// kernel's, which loads syscall programs: they must be sleepable, their
// context is a buffer read and written at fixed offsets, their helper set
// is syscall_prog_func_proto (bpf() and close() from BPF, the symbol
// table, then the tracing helpers), and as sleepable programs they may
// call the helpers and kfuncs that sleep, outside RCU and preemption
// sections.
func TestSyscallPrograms(t *testing.T) {
	sys := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Syscall, flags: verifier.FlagSleepable, asm: asm, err: err, kmsg: err != ""}
	}
	notSleepable := func(c vcase) vcase { c.flags = 0; return c }
	withMaps := func(c vcase, m ...maps.Spec) vcase { c.maps = m; return c }
	btfCase := func(c vcase) vcase { c.btf = true; return c }
	arena := maps.Spec{Name: "arena", Type: maps.Arena, MaxEntries: 4, Flags: maps.FlagMmapable, MapExtra: 1 << 32}
	perf := maps.Spec{Name: "perf", Type: maps.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}
	hash := maps.Spec{Name: "hash", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	// A copy of 8 user bytes at address r3 to the stack.
	copyUser := "r1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\ncall 148\n"
	// bpf_copy_from_user_str(stack, 8, NULL, 0).
	copyStr := "r1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr4 = 0\ncall kernel-function#300\n"
	rcuLock, rcuUnlock := "call kernel-function#16\n", "call kernel-function#17\n"
	preemptOff, preemptOn := "call kernel-function#18\n", "call kernel-function#19\n"
	alloc := "r1 = map[fd:0] ll\nr2 = 0\nr3 = 1\nr4 = -1\nr5 = 0\ncall kernel-function#7\n"
	runCases(t, []vcase{
		sys("return 0", "r0 = 0\nexit", ""),
		sys("return any value", "r0 = -5\nexit", ""),
		notSleepable(sys("must be sleepable", "r0 = 0\nexit", "Syscall programs can only be sleepable")),
		// The context: any aligned access below U16_MAX.
		sys("ctx load and store", "r2 = *(u64 *)(r1 +0)\n*(u32 *)(r1 +100) = 7\nr3 = *(s16 *)(r1 +32766)\n*(u64 *)(r1 +8) = r2\nr0 = 0\nexit", ""),
		sys("ctx misaligned", "r0 = *(u32 *)(r1 +2)\nr0 = 0\nexit", "invalid bpf_context access off=2 size=4"),
		sys("ctx negative", "r0 = *(u8 *)(r1 -1)\nr0 = 0\nexit", "invalid bpf_context access off=-1 size=1"),
		sys("ctx moved", "r1 += 8\nr0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", "dereference of modified ctx ptr R1 off=8 disallowed"),
		sys("ctx pointer stored in ctx", "*(u64 *)(r1 +0) = r1\nr0 = 0\nexit", ""),
		// The syscall helpers.
		sys("sys_bpf", "*(u64 *)(r10 -8) = 0\nr1 = 2\nr2 = r10\nr2 += -8\nr3 = 8\ncall 166\nr0 = 0\nexit", ""),
		sys("sys_bpf needs a size", "*(u64 *)(r10 -8) = 0\nr1 = 2\nr2 = r10\nr2 += -8\nr3 = 0\ncall 166\nr0 = 0\nexit", "R3 invalid zero-sized read"),
		sys("sys_bpf from ctx", "r2 = r1\nr1 = 2\nr3 = 8\ncall 166\nr0 = 0\nexit", "R2 type=ctx expected=fp"),
		sys("sys_close", "r1 = 3\ncall 168\nr0 = 0\nexit", ""),
		sys("kallsyms_lookup_name", "*(u64 *)(r10 -16) = 0\nr1 = r10\nr1 += -16\nr2 = 8\nr3 = 0\nr4 = r10\nr4 += -8\ncall 179\nr0 = *(u64 *)(r10 -8)\nexit", ""),
		sys("btf_find_by_name_kind", "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = 1\nr4 = 0\ncall 167\nr0 = 0\nexit", ""),
		sys("no func ip", "call 173\nr0 = 0\nexit", "func bpf_get_func_ip#173 not supported for program type 31"),
		sys("no skb helper", "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall 26\nr0 = 0\nexit", "program of this type cannot use helper bpf_skb_load_bytes#26"),
		// Sleepable programs: helpers that might sleep, outside RCU
		// and preemption sections.
		sys("copy_from_user", copyUser+"r0 = 0\nexit", ""),
		sys("copy_from_user in rcu", rcuLock+copyUser+rcuUnlock+"r0 = 0\nexit", "sleepable helper bpf_copy_from_user#148 in rcu_read_lock region"),
		sys("copy_from_user after rcu", rcuLock+rcuUnlock+copyUser+"r0 = 0\nexit", ""),
		sys("copy_from_user non-preemptible", preemptOff+copyUser+preemptOn+"r0 = 0\nexit", "sleepable helper bpf_copy_from_user#148 in non-preemptible region"),
		// bpf_base_func_proto gives every type bpf_copy_from_user.
		{name: "copy_from_user in xdp", asm: copyUser + "r0 = 0\nexit", err: "helper call might sleep in a non-sleepable prog", kmsg: true},
		{name: "copy_from_user in kprobe", typ: ebpf.Kprobe, asm: copyUser + "r0 = 0\nexit", err: "helper call might sleep in a non-sleepable prog", kmsg: true},
		// uprobe.s: a sleepable kprobe (the kernel checks the uprobe
		// when it attaches).
		{name: "copy_from_user in sleepable kprobe", typ: ebpf.Kprobe, flags: verifier.FlagSleepable, asm: copyUser + "r0 = 0\nexit"},
		{name: "sleepable tracepoint", typ: ebpf.TracePoint, flags: verifier.FlagSleepable, asm: "r0 = 0\nexit",
			err: "Only fentry/fexit/fmod_ret, lsm, iter, uprobe, and struct_ops programs can be sleepable", kmsg: true},
		// Sleepable kfuncs (KF_SLEEPABLE).
		sys("copy_from_user_str", copyStr+"r0 = 0\nexit", ""),
		sys("copy_from_user_str in rcu", rcuLock+copyStr+rcuUnlock+"r0 = 0\nexit", "kernel func bpf_copy_from_user_str is sleepable within rcu_read_lock region"),
		sys("copy_from_user_str non-preemptible", preemptOff+copyStr+preemptOn+"r0 = 0\nexit", "kernel func bpf_copy_from_user_str is sleepable within non-preemptible region"),
		{name: "copy_from_user_str in xdp", asm: copyStr + "r0 = 0\nexit", err: "program must be sleepable to call sleepable kfunc bpf_copy_from_user_str", kmsg: true},
		btfCase(sys("copy_from_user_task_str", "call 158\nr4 = r0\n"+"r1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr5 = 0\ncall kernel-function#301\nr0 = 0\nexit", "")),
		// In the common set: kprobes too.
		{name: "copy_from_user_task_str in sleepable kprobe", typ: ebpf.Kprobe, flags: verifier.FlagSleepable, btf: true,
			asm: "call 158\nr4 = r0\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr5 = 0\ncall kernel-function#301\nr0 = 0\nexit"},
		// The arena's page allocator, KF_SLEEPABLE since 6.18.
		withMaps(sys("arena alloc", alloc+"r0 = 0\nexit", ""), arena),
		withMaps(sys("arena alloc and free", alloc+"r2 = r0\nr1 = map[fd:0] ll\nr3 = 1\ncall kernel-function#8\nr0 = 0\nexit", ""), arena),
		withMaps(sys("arena alloc in rcu", rcuLock+alloc+rcuUnlock+"r0 = 0\nexit", "kernel func bpf_arena_alloc_pages is sleepable within rcu_read_lock region"), arena),
		// The maps of sleepable programs.
		withMaps(sys("hash", "r1 = map[fd:0] ll\nr0 = 0\nexit", ""), hash),
		withMaps(sys("perf event array", "r1 = map[fd:0] ll\nr0 = 0\nexit", "Sleepable programs can only use array, hash, ringbuf and local storage maps"), perf),
		// A sleepable program's lookups run outside an RCU section:
		// the value is still a map value.
		withMaps(sys("hash lookup", "*(u32 *)(r10 -4) = 0\nr2 = r10\nr2 += -4\nr1 = map[fd:0] ll\ncall 1\nif r0 == 0 goto +1\nr0 = *(u64 *)(r0 +0)\nr0 = 0\nexit", ""), hash),
	})
}
