package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
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

// memberOff returns the byte offset of s's member called name.
func memberOff(t *testing.T, s *btf.Struct, name string) int {
	t.Helper()
	for _, m := range s.Members {
		if m.Name == name {
			return int(m.Offset.Bytes())
		}
	}
	t.Skipf("struct %s has no member %s", s.Name, name)
	return 0
}

// Pointers to kernel objects (PtrToBTFID) from bpf_cast_to_kern_ctx and
// bpf_rdonly_cast, compared with the kernel: the walk of their types,
// the trust of the pointers read through them, and what they may not do.
// The kernel's type ids are the host's, and so are ours (vcase.btf).
func TestSelftestBTFPointers(t *testing.T) {
	spec := hostBTF(t)
	xdp, _ := hostStruct(t, spec, "xdp_buff")
	rxq, _ := hostStruct(t, spec, "xdp_rxq_info")
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
			err: "arg#0 expected pointer to ctx, but got scalar", kmsg: true},
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
		{name: "atomic", btf: true, asm: rdonly(taskID) + fmt.Sprintf("r1 = 1\nlock *(u32 *)(r0 +%d) += r1\nr0 = 0\nexit", pidOff), err: "only read is supported", kmsg: true},
	})
}
