package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

// TestSelftestKernelObjectHelpers: bpf_task_pt_regs, bpf_find_vma and
// bpf_d_path as the kernel verifies them (kernel/trace/bpf_trace.c,
// kernel/bpf/task_iter.c), compared with it where the program type loads
// here (iterators, tp_btf, kprobes; fentry is EPERM on this kernel): a
// trusted or plain task_struct, never NULL; pt_regs as a plain pointer;
// find_vma's callback(task, vma, ctx) returning 0 or 1; d_path on a
// struct path (an embedded one too: &file->f_path) where
// btf_allowlist_d_path allows it, into writable memory.
func TestSelftestKernelObjectHelpers(t *testing.T) {
	spec := hostBTF(t)
	regs, _ := hostStruct(t, spec, "pt_regs")
	file, _ := hostStruct(t, spec, "file")
	vma, _ := hostStruct(t, spec, "vm_area_struct")
	ip, fpath, vmStart := memberOff(t, regs, "ip"), memberOff(t, file, "f_path"), memberOff(t, vma, "vm_start")
	it := func(name, target, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: target, asm: asm, err: err, kmsg: err != ""}
	}
	tp := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceRawTp, attachTo: "sched_switch", asm: asm, err: err, kmsg: err != ""}
	}
	fentry := func(name, target, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceFEntry, attachTo: target, asm: asm, err: err, kmsg: err != ""}
	}
	task := "r1 = *(u64 *)(r1 +8)\nif r1 == 0 goto out\n"
	out := "\nout: r0 = 0\nexit"
	readIP := fmt.Sprintf("r0 = *(u64 *)(r0 +%d)\n", ip)
	// find_vma(task, 0x1000, cb, fp-8, 0) from a task in r1.
	findVMA := func(cb string) string {
		return "*(u64 *)(r10 -8) = 0\nr2 = 0x1000\nr3 = subprog[cb] ll\nr4 = r10\nr4 += -8\nr5 = 0\ncall 180\nr0 = 0\nexit\nout: r0 = 0\nexit\ncb: " + cb
	}
	filePath := fmt.Sprintf("r1 = *(u64 *)(r1 +24)\nif r1 == 0 goto out\nr1 += %d\n", fpath)
	buf := "r2 = 0\n*(u64 *)(r10 -16) = r2\n*(u64 *)(r10 -8) = r2\nr2 = r10\nr2 += -16\nr3 = 16\n"
	runCases(t, []vcase{
		it("pt_regs of the task", "task", task+"call 175\n"+readIP+"r0 = 0\nexit"+out, ""),
		it("pt_regs of a maybe-null task", "task", "r1 = *(u64 *)(r1 +8)\ncall 175\nr0 = 0\nexit", "R1 type=trusted_ptr_or_null_ expected=ptr_, trusted_ptr_, rcu_ptr_"),
		it("pt_regs of the meta", "task", "r1 = *(u64 *)(r1 +0)\ncall 175\nr0 = 0\nexit", "R1 is of type bpf_iter_meta but task_struct is expected"),
		it("pt_regs store", "task", task+"call 175\nr1 = 0\n*(u64 *)(r0 +0) = r1\nr0 = 0\nexit"+out, "only read is supported"),
		it("pt_regs past the end", "task", task+"call 175\nr0 = *(u64 *)(r0 +168)\nr0 = 0\nexit"+out, "access beyond struct pt_regs at off 168 size 8"),
		tp("pt_regs of prev", "r1 = *(u64 *)(r1 +8)\ncall 175\n"+readIP+"r0 = 0\nexit", ""),
		{name: "pt_regs of the current task", typ: ebpf.Kprobe, btf: true, asm: "call 158\nr1 = r0\ncall 175\n" + readIP + "r0 = 0\nexit"},
		{name: "pt_regs of a scalar", typ: ebpf.Kprobe, btf: true, asm: "r1 = 0\ncall 175\nr0 = 0\nexit", err: "R1 type=scalar expected=ptr_, trusted_ptr_, rcu_ptr_", kmsg: true},

		it("find_vma", "task", task+findVMA(fmt.Sprintf("r0 = *(u64 *)(r2 +%d)\nr0 = 0\nexit", vmStart)), ""),
		it("find_vma callback reads the task", "task", task+findVMA("r0 = *(u32 *)(r1 +0)\nr0 = 1\nexit"), ""),
		it("find_vma callback ctx", "task", task+findVMA("r0 = *(u64 *)(r3 +0)\nr0 = 0\nexit"), ""),
		it("find_vma callback returns 2", "task", task+findVMA("r0 = 2\nexit"), "At callback return the register R0 has smin=2 smax=2 should have been in [0, 1]"),
		it("find_vma callback writes the vma", "task", task+findVMA("r0 = 0\n*(u64 *)(r2 +0) = r0\nexit"), "only read is supported"),
		it("find_vma callback's task is trusted", "task", task+findVMA("call 175\nr0 = 0\nexit"), ""),
		it("find_vma callback's vma is plain", "task", task+findVMA("r1 = r2\ncall 175\nr0 = 0\nexit"), "R1 is of type vm_area_struct but task_struct is expected"),
		it("find_vma callback reads r4", "task", task+findVMA("r0 = r4\nexit"), "R4 !read_ok"),
		it("find_vma of a maybe-null task", "task", "r6 = r1\nr1 = *(u64 *)(r6 +8)\nif r6 == 0 goto out\n"+findVMA("r0 = 0\nexit"), "R1 type=trusted_ptr_or_null_ expected=ptr_, trusted_ptr_, rcu_ptr_"),
		it("find_vma ctx not on the stack", "task", task+"r2 = 0\nr3 = subprog[cb] ll\nr4 = 1\nr5 = 0\ncall 180\nr0 = 0\nexit\nout: r0 = 0\nexit\ncb: r0 = 0\nexit", "R4 type=scalar expected=fp"),

		it("d_path of a file's path", "task_file", filePath+buf+"call 147\nr0 = 0\nexit"+out, ""),
		// ARG_PTR_TO_MEM | MEM_WRITE: the kernel takes stack the
		// helper fills.
		it("d_path into uninitialised stack", "task_file", filePath+"r2 = r10\nr2 += -16\nr3 = 16\ncall 147\nr0 = 0\nexit"+out, ""),
		it("d_path of a file", "task_file", "r1 = *(u64 *)(r1 +24)\nif r1 == 0 goto out\n"+buf+"call 147\nr0 = 0\nexit"+out, "R1 is of type file but path is expected"),
		it("d_path of size 0", "task_file", filePath+buf+"r3 = 0\ncall 147\nr0 = 0\nexit"+out, ""),
		tp("d_path in tp_btf", "r1 = *(u64 *)(r1 +8)\n"+buf+"call 147\nr0 = 0\nexit", "helper call is not allowed in probe"),
		{name: "d_path in a kprobe", typ: ebpf.Kprobe, btf: true, asm: "call 147\nr0 = 0\nexit", err: "program of this type cannot use helper bpf_d_path#147", kmsg: true},
		fentry("d_path at vfs_truncate", "vfs_truncate", "r1 = *(u64 *)(r1 +0)\n"+buf+"call 147\nr0 = 0\nexit", ""),
		fentry("d_path at vfs_read", "vfs_read", "r1 = *(u64 *)(r1 +0)\n"+fmt.Sprintf("if r1 == 0 goto out\nr1 += %d\n", fpath)+buf+"call 147\nr0 = 0\nexit"+out, "helper call is not allowed in probe"),
	})
}
