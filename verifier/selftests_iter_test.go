package verifier_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/verifier"
)

// TestIterPrograms: iterators' contexts typed by bpf_iter_<target> with
// what each target registers (nullable, trusted elements), the seq_file
// helpers' BTF-typed argument, the [0, 1] return range; compared with the
// kernel, which loads iterators without attaching them.
func TestIterPrograms(t *testing.T) {
	it := func(name, target, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: target, asm: asm, err: err, kmsg: err != ""}
	}
	const seq = "r6 = *(u64 *)(r1 +0)\nr6 = *(u64 *)(r6 +0)\n" // meta->seq
	const buf = "r2 = 0\n*(u64 *)(r10 -8) = r2\nr2 = r10\nr2 += -8\n"
	cases := []vcase{
		it("return 0", "task", "r0 = 0\nexit", ""),
		it("return 1", "task", "r0 = 1\nexit", ""),
		it("return 2", "task", "r0 = 2\nexit", "At program exit the register R0 has smin=2 smax=2 should have been in [0, 1]"),
		it("task unchecked", "task", "r2 = *(u64 *)(r1 +8)\nr0 = *(u32 *)(r2 +0)\nr0 = 0\nexit", "R2 invalid mem access 'trusted_ptr_or_null_'"),
		it("task checked", "task", "r2 = *(u64 *)(r1 +8)\nif r2 == 0 goto +1\nr0 = *(u64 *)(r2 +0)\nr0 = 0\nexit", ""),
		it("meta", "task", "r2 = *(u64 *)(r1 +0)\nr0 = *(u64 *)(r2 +16)\nr0 = 0\nexit", ""),
		it("past the task", "task", "r2 = *(u64 *)(r1 +16)\nr0 = 0\nexit", "invalid bpf_context access off=16 size=8"),
		it("ctx store", "task", "r2 = 0\n*(u64 *)(r1 +8) = r2\nr0 = 0\nexit", "invalid bpf_context access off=8 size=8"),
		it("seq_write", "task", seq+buf+"r1 = r6\nr3 = 8\ncall 127\nr0 = 0\nexit", ""),
		it("seq_write of nothing", "task", seq+"r1 = r6\nr2 = 0\nr3 = 0\ncall 127\nr0 = 0\nexit", "R2 type=scalar expected=fp"),
		it("seq_write on a scalar", "task", buf+"r1 = 0\nr3 = 8\ncall 127\nr0 = 0\nexit", "R1 type=scalar expected=ptr_, trusted_ptr_, rcu_ptr_"),
		it("seq_write on the meta", "task", "r6 = *(u64 *)(r1 +0)\n"+buf+"r1 = r6\nr3 = 8\ncall 127\nr0 = 0\nexit", "R1 is of type bpf_iter_meta but seq_file is expected"),
		it("seq_write on a NULL task", "task", "r6 = *(u64 *)(r1 +8)\n"+buf+"r1 = r6\nr3 = 8\ncall 127\nr0 = 0\nexit", "R1 type=trusted_ptr_or_null_ expected=ptr_, trusted_ptr_, rcu_ptr_"),
		it("seq_printf", "task", seq+"r2 = 0x0a6968\n*(u64 *)(r10 -8) = r2\nr2 = r10\nr2 += -8\nr1 = r6\nr3 = 8\nr4 = 0\nr5 = 0\ncall 126\nr0 = 0\nexit", ""),
		// An 8-byte btf_ptr: the helper's -EINVAL, the verifier's
		// acceptance.
		it("seq_printf_btf", "task", seq+buf+"r1 = r6\nr3 = 8\nr4 = 0\ncall 150\nr0 = 0\nexit", ""),
		it("seq_printf_btf on a scalar", "task", buf+"r1 = 0\nr3 = 8\nr4 = 0\ncall 150\nr0 = 0\nexit", "R1 type=scalar expected=ptr_, trusted_ptr_, rcu_ptr_"),
		it("snprintf_btf", "task", "r1 = 0\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -8) = r1\n*(u64 *)(r10 -24) = r1\nr1 = r10\nr1 += -24\nr2 = 8\nr3 = r10\nr3 += -16\nr4 = 16\nr5 = 0\ncall 149\nr0 = 0\nexit", ""),
		it("snprintf_btf of size 0", "task", "r1 = 0\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -8) = r1\nr1 = r10\nr1 += -24\nr2 = 0\nr3 = r10\nr3 += -16\nr4 = 16\nr5 = 0\ncall 149\nr0 = 0\nexit", "R2 invalid zero-sized read"),
		it("map unchecked", "bpf_map", "r2 = *(u64 *)(r1 +8)\nr0 = *(u32 *)(r2 +0)\nr0 = 0\nexit", "R2 invalid mem access 'trusted_ptr_or_null_'"),
		it("task_file fd", "task_file", "r0 = *(u32 *)(r1 +16)\nr0 = 0\nexit", ""),
		it("task_file file unchecked", "task_file", "r2 = *(u64 *)(r1 +24)\nr0 = *(u64 *)(r2 +0)\nr0 = 0\nexit", "R2 invalid mem access 'ptr_or_null_'"),
		it("cgroup checked", "cgroup", "r2 = *(u64 *)(r1 +8)\nif r2 == 0 goto +1\nr0 = *(u64 *)(r2 +0)\nr0 = 0\nexit", ""),
		{name: "sleepable iterator", typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "task", flags: verifier.FlagSleepable, asm: "r0 = 0\nexit"},
		// bpf_copy_from_user(_task) might sleep.
		{name: "copy_from_user sleepable", typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "task", flags: verifier.FlagSleepable,
			asm: "r1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\ncall 148\nr0 = 0\nexit"},
		it("copy_from_user not sleepable", "task", "r1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\ncall 148\nr0 = 0\nexit", "helper call might sleep in a non-sleepable prog"),
		{name: "copy_from_user_task", typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "task", flags: verifier.FlagSleepable,
			asm: "r4 = *(u64 *)(r1 +8)\nif r4 == 0 goto +6\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr5 = 0\ncall 191\nr0 = 0\nexit"},
		{name: "copy_from_user_task of a NULL task", typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "task", flags: verifier.FlagSleepable,
			asm: "r4 = *(u64 *)(r1 +8)\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr5 = 0\ncall 191\nr0 = 0\nexit",
			err: "R4 type=trusted_ptr_or_null_ expected=ptr_, trusted_ptr_, rcu_ptr_", kmsg: true},
		// The kernel refuses map element iterators here (EPERM, with
		// a log): TestIterBuffers has their buffers.
		{name: "map element key", typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "bpf_map_elem", asm: "r2 = *(u64 *)(r1 +16)\nr0 = 0\nexit", noKernel: true},
	}
	runCases(t, cases)
}

// TestIterAttach: targets the kernel does not register.
func TestIterAttach(t *testing.T) {
	spec := hostBTF(t)
	tg, err := verifier.ResolveAttach(spec, ebpf.AttachTraceIter, "task")
	if err != nil || tg.Name != "bpf_iter_task" || tg.Iter != "task" {
		t.Fatalf("task: %+v, %v", tg, err)
	}
	_, err = verifier.ResolveAttach(spec, ebpf.AttachTraceIter, "no_such_target")
	if !errors.Is(err, verifier.ErrAttachTarget) || !strings.Contains(err.Error(), "no iterator target no_such_target") {
		t.Errorf("no_such_target: %v", err)
	}
}
