package verifier_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// hostStruct returns the host's struct called name and its BTF id.
func hostStruct(t *testing.T, spec *btf.Spec, name string) (*btf.Struct, btf.TypeID) {
	t.Helper()
	var s *btf.Struct
	if err := spec.TypeByName(name, &s); err != nil {
		t.Skipf("host BTF: %v", err)
	}
	id, err := spec.TypeID(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, id
}

// memberOff returns the byte offset of s's member called name, looking
// into anonymous structs and unions.
func memberOff(t *testing.T, s *btf.Struct, name string) int {
	t.Helper()
	off, ok := findMember(s.Members, name)
	if !ok {
		t.Skipf("struct %s has no member %s", s.Name, name)
	}
	return off
}

func findMember(ms []btf.Member, name string) (int, bool) {
	for _, m := range ms {
		if m.Name == name {
			return int(m.Offset.Bytes()), true
		}
		if m.Name != "" {
			continue
		}
		var inner []btf.Member
		switch u := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = u.Members
		case *btf.Union:
			inner = u.Members
		}
		if off, ok := findMember(inner, name); ok {
			return int(m.Offset.Bytes()) + off, true
		}
	}
	return 0, false
}

// Pointers to kernel objects (PtrToBTFID) from bpf_cast_to_kern_ctx and
// bpf_rdonly_cast, compared with the kernel: the walk of their types,
// the trust of the pointers read through them, and what they may not do.
// The kernel's type ids are the host's, and so are ours (vcase.btf).
func TestSelftestBTFPointers(t *testing.T) {
	spec := hostBTF(t)
	xdp, _ := hostStruct(t, spec, "xdp_buff")
	rxq, rxqID := hostStruct(t, spec, "xdp_rxq_info")
	skb, _ := hostStruct(t, spec, "sk_buff")
	task, taskID := hostStruct(t, spec, "task_struct")
	var u32 *btf.Typedef
	if err := spec.TypeByName("u32", &u32); err != nil {
		t.Skip(err)
	}
	u32ID, _ := spec.TypeID(u32)
	rxqOff, devOff := memberOff(t, xdp, "rxq"), memberOff(t, rxq, "dev")
	qiOff := memberOff(t, rxq, "queue_index")
	skOff, lenOff := memberOff(t, skb, "sk"), memberOff(t, skb, "len")
	pidOff, parentOff := memberOff(t, task, "pid"), memberOff(t, task, "real_parent")
	utimeOff := memberOff(t, task, "utime")

	cast := "call bpf_cast_to_kern_ctx#0\n"
	rdonly := func(id btf.TypeID) string { return fmt.Sprintf("r2 = %d\ncall bpf_rdonly_cast#0\n", id) }
	runCases(t, []vcase{
		// bpf_cast_to_kern_ctx: a trusted pointer to the context's
		// kernel struct.
		{name: "xdp_buff field", btf: true, asm: cast + fmt.Sprintf("r1 = *(u64 *)(r0 +%d)\nr2 = *(u32 *)(r1 +%d)\nr0 = 0\nexit", rxqOff, qiOff)},
		{name: "xdp_buff pointer chain", btf: true, asm: cast + fmt.Sprintf("r1 = *(u64 *)(r0 +%d)\nr1 = *(u64 *)(r1 +%d)\nr0 = *(u32 *)(r1 +0)\nr0 = 0\nexit", rxqOff, devOff)},
		{name: "xdp_buff moved pointer", btf: true, asm: cast + fmt.Sprintf("r0 += %d\nr1 = *(u64 *)(r0 +0)\nr0 = 0\nexit", rxqOff)},
		{name: "xdp_buff void pointer member", btf: true, asm: cast + "r1 = *(u64 *)(r0 +0)\nr0 = *(u8 *)(r1 +100)\nr0 = 0\nexit"},
		{name: "void pointer member write", btf: true, asm: cast + "r1 = *(u64 *)(r0 +0)\nr2 = 0\n*(u8 *)(r1 +0) = r2\nr0 = 0\nexit",
			err: "R1 cannot write into rdonly_untrusted_mem", kmsg: true},
		{name: "beyond struct", btf: true, asm: cast + fmt.Sprintf("r0 = *(u64 *)(r0 +%d)\nr0 = 0\nexit", xdp.Size),
			err: fmt.Sprintf("access beyond struct xdp_buff at off %d size 8", xdp.Size), kmsg: true},
		{name: "negative offset", btf: true, asm: cast + "r0 += -8\nr0 = *(u64 *)(r0 +0)\nr0 = 0\nexit",
			err: "R0 is ptr_xdp_buff invalid negative access: off=-8", kmsg: true},
		{name: "variable offset", btf: true, asm: cast + "r1 = *(u32 *)(r0 +56)\nr0 = 0\nexit",
			err: fmt.Sprintf("access beyond struct xdp_buff at off 56 size 4"), kmsg: true},
		{name: "variable offset pointer", btf: true, asm: "r7 = *(u32 *)(r1 +12)\nr7 &= 8\n" + cast + "r0 += r7\nr0 = *(u64 *)(r0 +0)\nr0 = 0\nexit",
			err: "R0 is ptr_xdp_buff invalid variable offset: off=0, var_off=(0x0; 0x8)", kmsg: true},
		{name: "narrow pointer member", btf: true, asm: cast + fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nr0 = 0\nexit", rxqOff),
			err: fmt.Sprintf("cannot access ptr member rxq with moff %d in struct xdp_buff with off %d size 4", rxqOff, rxqOff), kmsg: true},
		{name: "store", btf: true, asm: cast + "r1 = 0\n*(u64 *)(r0 +0) = r1\nr0 = 0\nexit", err: "only read is supported", kmsg: true},
		{name: "cast of non-ctx", btf: true, asm: "r1 = r10\n" + cast + "r0 = 0\nexit",
			err: "arg#0 expected pointer to ctx, but got fp", kmsg: true},
		{name: "cast of scalar", btf: true, asm: "r1 = 0\n" + cast + "r0 = 0\nexit",
			err: "Possibly NULL pointer passed to trusted arg0", kmsg: true},
		{name: "cast of moved ctx", btf: true, asm: "r1 += 4\n" + cast + "r0 = 0\nexit",
			err: "dereference of modified ctx ptr R1 off=4 disallowed", kmsg: true},
		{name: "scalar load is unknown", btf: true, asm: cast + fmt.Sprintf("r1 = *(u64 *)(r0 +%d)\nr0 = *(u32 *)(r1 +%d)\nr0 = *(u8 *)(r0 +0)\nexit", rxqOff, qiOff),
			err: "R0 invalid mem access 'scalar'", kmsg: true},

		// sk_buff->sk is RCU-or-null: checked before use.
		{name: "skb sk unchecked", typ: ebpf.SchedCLS, btf: true, asm: cast + fmt.Sprintf("r1 = *(u64 *)(r0 +%d)\nr0 = *(u32 *)(r1 +0)\nr0 = 0\nexit", skOff),
			err: "R1 invalid mem access 'rcu_ptr_or_null_'", kmsg: true},
		{name: "skb sk checked", typ: ebpf.SchedCLS, btf: true, asm: cast + fmt.Sprintf("r1 = *(u64 *)(r0 +%d)\nif r1 == 0 goto out\nr0 = *(u32 *)(r1 +0)\nout: r0 = 0\nexit", skOff)},
		{name: "skb sk arithmetic", typ: ebpf.SchedCLS, btf: true, asm: cast + fmt.Sprintf("r1 = *(u64 *)(r0 +%d)\nr1 += 8\nr0 = 0\nexit", skOff),
			err: "R1 pointer arithmetic on rcu_ptr_or_null_ prohibited, null-check it first", kmsg: true},
		{name: "skb len", typ: ebpf.SchedCLS, btf: true, asm: cast + fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nexit", lenOff)},
		{name: "skb cb as scratch", typ: ebpf.SchedCLS, btf: true, asm: cast + fmt.Sprintf("r0 = *(u64 *)(r0 +%d)\nr0 = 0\nexit", memberOff(t, skb, "cb")+4)},
		{name: "skb cb beyond", typ: ebpf.SchedCLS, btf: true, asm: cast + fmt.Sprintf("r0 = *(u64 *)(r0 +%d)\nr0 = 0\nexit", memberOff(t, skb, "cb")+44),
			err: fmt.Sprintf("access beyond the end of member cb (mend:%d) in struct sk_buff with off %d size 8", memberOff(t, skb, "cb")+48, memberOff(t, skb, "cb")+44), kmsg: true},

		// bpf_rdonly_cast: an untrusted pointer to any struct.
		{name: "rdonly_cast task", btf: true, asm: rdonly(taskID) + fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nr0 = 0\nexit", pidOff)},
		{name: "rdonly_cast task parent", btf: true, asm: rdonly(taskID) + fmt.Sprintf("r0 = *(u64 *)(r0 +%d)\nr0 = *(u32 *)(r0 +%d)\nr0 = 0\nexit", parentOff, pidOff)},
		{name: "rdonly_cast of scalar", btf: true, asm: "r1 = 0\n" + rdonly(taskID) + fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nr0 = 0\nexit", pidOff)},
		{name: "rdonly_cast void", btf: true, asm: rdonly(0) + "r0 = *(u64 *)(r0 +1000)\nr0 = 0\nexit"},
		{name: "rdonly_cast non-struct", btf: true, asm: rdonly(u32ID) + "r0 = 0\nexit",
			err: "kfunc bpf_rdonly_cast type ID argument must be of a struct or void", kmsg: true},
		{name: "rdonly_cast unknown id", btf: true, asm: rdonly(0x7fffffff) + "r0 = 0\nexit",
			err: "Unknown type ID 2147483647 passed to kfunc bpf_rdonly_cast", kmsg: true},
		{name: "rdonly_cast variable id", btf: true, asm: "r2 = *(u32 *)(r1 +12)\ncall bpf_rdonly_cast#0\nr0 = 0\nexit",
			err: "R2 must be a known constant", kmsg: true},
		{name: "rdonly_cast pointer id", btf: true, asm: "r2 = r10\ncall bpf_rdonly_cast#0\nr0 = 0\nexit",
			err: "R2 is not a scalar", kmsg: true},
		{name: "rdonly_cast store", btf: true, asm: rdonly(taskID) + "r1 = 0\n*(u32 *)(r0 +0) = r1\nr0 = 0\nexit", err: "only read is supported", kmsg: true},
		{name: "rdonly_cast beyond", btf: true, asm: rdonly(taskID) + fmt.Sprintf("r0 = *(u8 *)(r0 +%d)\nr0 = 0\nexit", task.Size),
			err: fmt.Sprintf("access beyond struct task_struct at off %d size 1", task.Size), kmsg: true},
		{name: "rdonly_cast to helper memory", btf: true, asm: rdonly(taskID) + "r1 = r0\nr2 = 4\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit",
			err: "R1 type=untrusted_ptr_ expected=fp", kmsg: true},
		// Pointers to different types never prune one another: either
		// path order fails at the access beyond the smaller struct.
		{name: "types do not prune", btf: true, asm: pruneTypes(rxqID, taskID, utimeOff),
			err: fmt.Sprintf("access beyond struct xdp_rxq_info at off %d size 8", utimeOff), kmsg: true},
		{name: "types do not prune swapped", btf: true, asm: pruneTypes(taskID, rxqID, utimeOff),
			err: fmt.Sprintf("access beyond struct xdp_rxq_info at off %d size 8", utimeOff), kmsg: true},
		// The kernel lets helpers read trusted kernel objects; bpfvm's
		// objects behind such pointers are not the kernel's (the context
		// cast gives the context's own, smaller, memory), and unchecked
		// helpers would read past it: refused.
		{name: "trusted pointer to helper memory", btf: true, noKernel: true, asm: cast + "r1 = r0\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit",
			err: "R1 type=trusted_ptr_ expected=fp"},
		{name: "untrusted memory to helper memory", btf: true, asm: rdonly(0) + "r1 = r0\nr2 = 4\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit",
			err: "R1 type=rdonly_untrusted_mem expected=fp", kmsg: true},
		{name: "spilled and filled", btf: true, asm: cast + fmt.Sprintf("*(u64 *)(r10 -8) = r0\nr1 = *(u64 *)(r10 -8)\nr1 = *(u64 *)(r1 +%d)\nr0 = *(u32 *)(r1 +%d)\nr0 = 0\nexit", rxqOff, qiOff)},
		{name: "spilled and filled beyond", btf: true, asm: cast + fmt.Sprintf("*(u64 *)(r10 -8) = r0\nr1 = *(u64 *)(r10 -8)\nr0 = *(u64 *)(r1 +%d)\nr0 = 0\nexit", xdp.Size),
			err: fmt.Sprintf("access beyond struct xdp_buff at off %d size 8", xdp.Size), kmsg: true},
		{name: "compared with null", btf: true, asm: cast + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		// One load may read a kernel object on one path and memory on
		// another, not a kernel object and a map value.
		{name: "object or memory", btf: true, asm: mixedLoad(fmt.Sprintf("r2 = 0\ncall bpf_rdonly_cast#0"), 0)},
		{name: "object or map value", btf: true, maps: []maps.Spec{arrayMap}, asm: mixedLoad("*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out", 0),
			err: "same insn cannot be used with different pointers", kmsg: true},
		{name: "atomic", btf: true, asm: rdonly(taskID) + fmt.Sprintf("r1 = 1\nlock *(u32 *)(r0 +%d) += r1\nr0 = 0\nexit", pidOff), err: "only read is supported", kmsg: true},
	})
}

// mixedLoad loads 8 bytes at off through bpf_cast_to_kern_ctx's pointer on
// one path and through what other leaves in R0 on the other.
func mixedLoad(other string, off int) string {
	return fmt.Sprintf(`r6 = r1
		r7 = *(u32 *)(r1 +12)
		if r7 == 0 goto other
		call bpf_cast_to_kern_ctx#0
		goto join
	other:
		%s
	join:
		r0 = *(u64 *)(r0 +%d)
	out:
		r0 = 0
		exit`, other, off)
}

// pruneTypes casts to type a on one path and b on the other, then loads 8
// bytes at off where both paths meet.
func pruneTypes(a, b btf.TypeID, off int) string {
	return fmt.Sprintf(`r6 = *(u32 *)(r1 +12)
		r1 = 0
		if r6 == 0 goto other
		r2 = %d
		call bpf_rdonly_cast#0
		goto join
	other:
		r2 = %d
		call bpf_rdonly_cast#0
	join:
		r0 = *(u64 *)(r0 +%d)
		r0 = 0
		exit`, a, b, off)
}

// Tracing programs' contexts (btf_ctx_access), compared with the kernel:
// fentry, fexit and fmod_ret on the kernel's test functions and others of
// this machine's vmlinux, tp_btf on scheduler tracepoints.
func TestSelftestTracingContext(t *testing.T) {
	spec := hostBTF(t)
	task, _ := hostStruct(t, spec, "task_struct")
	common, _ := hostStruct(t, spec, "sock_common")
	pidOff, parentOff := memberOff(t, task, "pid"), memberOff(t, task, "real_parent")
	familyOff := memberOff(t, common, "skc_family")
	skb, _ := hostStruct(t, spec, "sk_buff")
	mm, _ := hostStruct(t, spec, "mm_struct")
	skOff, mmOff, exeOff := memberOff(t, skb, "sk"), memberOff(t, task, "mm"), memberOff(t, mm, "exe_file")
	// A case whose error is invalid context access gives the reason the
	// kernel logs before it as err: the kernel's log must have it, our
	// error (and log) has the access.
	fentry := func(name, target, asm string, err string) vcase {
		c := vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceFEntry, attachTo: target, asm: asm, err: err, kmsg: err != ""}
		if strings.HasPrefix(err, "func '") || strings.HasPrefix(err, "ret type") {
			c.err, c.kmsg, c.klog = "invalid bpf_context access", false, err
		}
		return c
	}
	fexit := func(name, target, asm string, err string) vcase {
		c := fentry(name, target, asm, err)
		c.attach = ebpf.AttachTraceFExit
		return c
	}
	tp := func(name, target, asm string, err string) vcase {
		c := fentry(name, target, asm, err)
		c.attach = ebpf.AttachTraceRawTp
		return c
	}
	runCases(t, []vcase{
		fentry("int arg", "bpf_fentry_test1", "r0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", ""),
		fentry("int arg narrow", "bpf_fentry_test1", "r0 = *(u32 *)(r1 +0)\nr0 = 0\nexit", ""),
		fentry("second arg", "bpf_fentry_test2", "r0 = *(u64 *)(r1 +8)\nr0 = 0\nexit", ""),
		fentry("no such arg", "bpf_fentry_test1", "r0 = *(u64 *)(r1 +8)\nr0 = 0\nexit", "func 'bpf_fentry_test1' doesn't have 2-th argument"),
		fentry("no such arg message", "bpf_fentry_test1", "r0 = *(u64 *)(r1 +8)\nr0 = 0\nexit", "invalid bpf_context access off=8 size=8"),
		fentry("unaligned", "bpf_fentry_test1", "r0 = *(u32 *)(r1 +4)\nr0 = 0\nexit", "func 'bpf_fentry_test1' offset 4 is not multiple of 8"),
		fentry("misaligned", "bpf_fentry_test1", "r0 = *(u64 *)(r1 +4)\nr0 = 0\nexit", "invalid bpf_context access off=4 size=8"),
		fentry("store", "bpf_fentry_test1", "r2 = 0\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", "invalid bpf_context access off=0 size=8"),
		fentry("beyond slots", "bpf_fentry_test1", "r0 = *(u64 *)(r1 +96)\nr0 = 0\nexit", "invalid bpf_context access off=96 size=8"),
		fentry("return 1", "bpf_fentry_test1", "r0 = 1\nexit", "should have been in [0, 0]"),
		fentry("struct pointer", "tcp_sendmsg", fmt.Sprintf("r1 = *(u64 *)(r1 +0)\nr0 = *(u16 *)(r1 +%d)\nr0 = 0\nexit", familyOff), ""),
		fentry("struct pointer narrow", "tcp_sendmsg", "r1 = *(u32 *)(r1 +0)\nr0 = 0\nexit", "func 'tcp_sendmsg' size 4 must be 8"),
		fentry("struct pointer beyond", "tcp_sendmsg", "r1 = *(u64 *)(r1 +0)\nr0 = *(u8 *)(r1 +32000)\nr0 = 0\nexit", "access beyond struct sock at off 32000 size 1"),
		fentry("struct pointer store", "tcp_sendmsg", "r1 = *(u64 *)(r1 +0)\nr2 = 0\n*(u8 *)(r1 +0) = r2\nr0 = 0\nexit", "only read is supported"),
		fentry("size_t arg", "tcp_sendmsg", "r0 = *(u64 *)(r1 +16)\nr0 = 0\nexit", ""),
		fentry("int pointer is a scalar", "bpf_fentry_test9", "r1 = *(u64 *)(r1 +0)\nr0 = *(u32 *)(r1 +0)\nr0 = 0\nexit", "R1 invalid mem access 'scalar'"),
		fentry("test struct pointer", "bpf_fentry_test7", "r1 = *(u64 *)(r1 +0)\nr0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", ""),
		// A 12-byte struct argument takes two slots.
		fentry("struct argument", "ZSTD_copyCCtx_internal", "r0 = *(u64 *)(r1 +24)\nr0 = *(u64 *)(r1 +40)\nr0 = 0\nexit", ""),
		fentry("past a struct argument", "ZSTD_copyCCtx_internal", "r0 = *(u64 *)(r1 +48)\nr0 = 0\nexit", "func 'ZSTD_copyCCtx_internal' doesn't have 6-th argument"),
		fexit("return value", "bpf_fentry_test1", "r0 = *(u64 *)(r1 +8)\nr0 = 0\nexit", ""),
		fexit("past the return value", "bpf_fentry_test1", "r0 = *(u64 *)(r1 +16)\nr0 = 0\nexit", "func 'bpf_fentry_test1' doesn't have 3-th argument"),
		fexit("void return", "bpf_fentry_test_sinfo", "r0 = *(u64 *)(r1 +8)\nr0 = 0\nexit", "func 'bpf_fentry_test_sinfo' doesn't have 3-th argument"),
		fexit("pointer return", "inet_csk_accept", fmt.Sprintf("r1 = *(u64 *)(r1 +16)\nr0 = *(u16 *)(r1 +%d)\nr0 = 0\nexit", familyOff), ""),
		fexit("return 1", "bpf_fentry_test1", "r0 = 1\nexit", "should have been in [0, 0]"),
		{name: "fmod_ret return value", typ: ebpf.Tracing, attach: ebpf.AttachModifyReturn, attachTo: "bpf_modify_return_test", asm: "r0 = *(u64 *)(r1 +16)\nr0 = 1\nexit"},
		{name: "fmod_ret past the return value", typ: ebpf.Tracing, attach: ebpf.AttachModifyReturn, attachTo: "bpf_modify_return_test", asm: "r0 = *(u64 *)(r1 +24)\nr0 = 0\nexit",
			err: "invalid bpf_context access off=24 size=8", klog: "func 'bpf_modify_return_test' doesn't have 4-th argument"},
		tp("tracepoint bool", "sched_switch", "r0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", ""),
		tp("tracepoint task", "sched_switch", fmt.Sprintf("r1 = *(u64 *)(r1 +8)\nr0 = *(u32 *)(r1 +%d)\nr0 = 0\nexit", pidOff), ""),
		tp("tracepoint task parent", "sched_switch", fmt.Sprintf("r1 = *(u64 *)(r1 +16)\nr1 = *(u64 *)(r1 +%d)\nr0 = *(u32 *)(r1 +%d)\nr0 = 1\nexit", parentOff, pidOff), ""),
		tp("tracepoint last arg", "sched_switch", "r0 = *(u32 *)(r1 +24)\nr0 = 0\nexit", ""),
		tp("tracepoint no such arg", "sched_switch", "r0 = *(u64 *)(r1 +32)\nr0 = 0\nexit", "func 'sched_switch' doesn't have 5-th argument"),
		tp("tracepoint skb sk unchecked", "kfree_skb", fmt.Sprintf("r1 = *(u64 *)(r1 +0)\nr1 = *(u64 *)(r1 +%d)\nr0 = *(u32 *)(r1 +0)\nr0 = 0\nexit", skOff), "R1 invalid mem access 'rcu_ptr_or_null_'"),
		tp("tracepoint skb sk checked", "kfree_skb", fmt.Sprintf("r1 = *(u64 *)(r1 +0)\nr1 = *(u64 *)(r1 +%d)\nif r1 == 0 goto out\nr0 = *(u32 *)(r1 +0)\nout: r0 = 0\nexit", skOff), ""),
		tp("tracepoint plain parent", "sched_switch", fmt.Sprintf("r1 = *(u64 *)(r1 +8)\nr1 = *(u64 *)(r1 +%d)\nr1 = *(u64 *)(r1 +%d)\nr0 = *(u32 *)(r1 +0)\nr0 = 0\nexit", mmOff, exeOff), ""),
		// struct file starts with a spinlock: the walk goes into it.
		tp("tracepoint embedded struct", "sched_switch", fmt.Sprintf("r1 = *(u64 *)(r1 +8)\nr1 = *(u64 *)(r1 +%d)\nr1 = *(u64 *)(r1 +%d)\nr0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", mmOff, exeOff), "access beyond struct spinlock at off 0 size 8"),
		tp("tracepoint function pointer", "initcall_start", "r0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", "func 'initcall_start' arg0 type FUNC_PROTO is not a struct"),
		tp("tracepoint kern ctx", "sched_switch", "call bpf_cast_to_kern_ctx#0\nr0 = 0\nexit", "kern ctx type id"),
		tp("tracepoint moved ctx", "sched_switch", "r1 += 8\nr0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", "dereference of modified ctx ptr R1 off=8 disallowed"),
	})
}

// TestBTFWalkSweep loads every byte offset and size of kernel structs
// through bpf_rdonly_cast pointers, in bpfvm and in the kernel: the same
// verdict each time and, for rejections, the kernel's message. Pointer
// members read whole are loaded through once more, so that what the walk
// gives them (a pointer to a struct, untrusted memory) is compared too.
func TestBTFWalkSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of kernel loads")
	}
	spec := hostBTF(t)
	structs := []struct {
		name string
		step int
	}{{"xdp_buff", 1}, {"sk_buff", 1}, {"sock_common", 2}, {"xdp_rxq_info", 1}, {"file", 4}, {"task_struct", 16}}
	compared, agreed := 0, 0
	for _, s := range structs {
		st, id := hostStruct(t, spec, s.name)
		for off := 0; off < int(st.Size)+8; off += s.step {
			for _, size := range []string{"u8", "u16", "u32", "u64"} {
				asm := fmt.Sprintf("r2 = %d\ncall bpf_rdonly_cast#0\nr1 = *(%s *)(r0 +%d)\n", id, size, off)
				if size == "u64" {
					// Through what was read: a scalar's load fails, a
					// pointer's reads its target.
					asm += "r1 = *(u8 *)(r1 +0)\n"
				}
				asm += "r0 = 0\nexit"
				insns, err := isa.Assemble(asm)
				if err != nil {
					t.Fatal(err)
				}
				_, ours := verifier.Verify(insns, verifier.Options{Type: progType(ebpf.XDP), KernelTypes: spec})
				klog, _, ran := kernelVerdictInsns(t, ebpf.XDP, 0, 0, nil, nil, false, insns, nil, ours)
				if !ran {
					t.Skip("no kernel")
				}
				compared++
				var ve *verifier.Error
				switch {
				case ours == nil:
					agreed++
				case errors.As(ours, &ve) && strings.Contains(klog, ve.Msg):
					agreed++
				default:
					t.Errorf("%s off %d %s: ours %v, kernel:\n%s", s.name, off, size, ours, lastLines(klog, 2))
				}
			}
		}
	}
	t.Logf("%d loads compared, %d with the kernel's verdict and message", compared, agreed)
}

// TestBTFPointerLog compares the types the log shows for pointers to
// kernel objects with the kernel's (reg_type_str and the struct's name):
// each program walks to a pointer and then exits without R0, so that both
// logs, of a rejection, hold the state after the walk.
func TestBTFPointerLog(t *testing.T) {
	spec := hostBTF(t)
	task, taskID := hostStruct(t, spec, "task_struct")
	skb, _ := hostStruct(t, spec, "sk_buff")
	xdp, _ := hostStruct(t, spec, "xdp_buff")
	parentOff, mmOff := memberOff(t, task, "real_parent"), memberOff(t, task, "mm")
	skOff, rxqOff := memberOff(t, skb, "sk"), memberOff(t, xdp, "rxq")
	for _, c := range []struct {
		name     string
		attach   ebpf.AttachType
		attachTo string
		asm      string
		want     string
	}{
		{"tracepoint argument", ebpf.AttachTraceRawTp, "sched_switch", "r1 = *(u64 *)(r1 +8)\nexit", "=trusted_ptr_task_struct()"},
		{"rcu member", ebpf.AttachTraceRawTp, "sched_switch", fmt.Sprintf("r1 = *(u64 *)(r1 +8)\nr1 = *(u64 *)(r1 +%d)\nexit", parentOff), "=rcu_ptr_task_struct()"},
		{"plain member", ebpf.AttachTraceRawTp, "sched_switch", fmt.Sprintf("r1 = *(u64 *)(r1 +8)\nr1 = *(u64 *)(r1 +%d)\nexit", mmOff), "=ptr_mm_struct()"},
		{"member of a union", ebpf.AttachTraceRawTp, "kfree_skb", "r1 = *(u64 *)(r1 +0)\nr1 = *(u64 *)(r1 +0)\nexit", "=untrusted_ptr_sk_buff()"},
		{"rcu or null member", ebpf.AttachTraceRawTp, "kfree_skb", fmt.Sprintf("r1 = *(u64 *)(r1 +0)\nr1 = *(u64 *)(r1 +%d)\nexit", skOff), "=rcu_ptr_or_null_sock(id=1)"},
		{"fentry argument", ebpf.AttachTraceFEntry, "tcp_sendmsg", "r1 = *(u64 *)(r1 +0)\nexit", "=ptr_sock()"},
		{"rdonly_cast", 0, "", fmt.Sprintf("r2 = %d\ncall bpf_rdonly_cast#0\nr1 = r0\nr0 = *(u64 *)(r10 +8)\nexit", taskID), "=untrusted_ptr_task_struct()"},
		{"cast and walk", 0, "", fmt.Sprintf("call bpf_cast_to_kern_ctx#0\nr1 = *(u64 *)(r0 +%d)\nr0 = *(u64 *)(r10 +8)\nexit", rxqOff), "=ptr_xdp_rxq_info()"},
		{"void member", 0, "", "call bpf_cast_to_kern_ctx#0\nr1 = *(u64 *)(r0 +0)\nr0 = *(u64 *)(r10 +8)\nexit", "=rdonly_untrusted_mem(sz=0)"},
		{"moved", 0, "", "call bpf_cast_to_kern_ctx#0\nr0 += 8\nr1 = r0\nr0 = *(u64 *)(r10 +8)\nexit", "=trusted_ptr_xdp_buff(off=8)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.asm)
			if err != nil {
				t.Fatal(err)
			}
			typ := ebpf.XDP
			opts := verifier.Options{Type: progType(typ), KernelTypes: spec, LogLevel: 2}
			if c.attachTo != "" {
				typ = ebpf.Tracing
				opts.Type = progTypeAttach(typ, c.attach)
				if opts.Attach, err = verifier.ResolveAttach(spec, c.attach, c.attachTo); err != nil {
					t.Fatal(err)
				}
			}
			res, ours := verifier.Verify(insns, opts)
			if ours == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(res.Log, c.want) {
				t.Errorf("our log lacks %q:\n%s", c.want, res.Log)
			}
			klog, _, ran := kernelVerdictTo(t, typ, c.attach, c.attachTo, 0, nil, nil, false, insns, nil, ours)
			if ran && os.Getenv("BPFVM_KERNEL_LOG") != "" {
				t.Logf("kernel:\n%s", klog)
			}
			if ran && !strings.Contains(klog, c.want) {
				t.Errorf("the kernel's log lacks %q:\n%s", c.want, klog)
			}
		})
	}
}
