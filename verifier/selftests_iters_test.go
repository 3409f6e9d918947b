package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// Open-coded iterators other than the number one, as the kernel checks
// them (process_iter_arg, process_iter_next_call): bits from any program
// type, tasks and cgroups from tracing programs, the RCU-protected ones
// inside RCU read sections, the cgroup tasks one only where the kernel
// allows it; each compared with the running kernel's verdict and
// message.
func TestSelftestOpenIters(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("host BTF: %v", err)
	}
	task, _ := hostStruct(t, spec, "task_struct")
	pidOff := memberOff(t, task, "pid")
	vma, _ := hostStruct(t, spec, "vm_area_struct")
	vmStartOff := memberOff(t, vma, "vm_start")

	xdp := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.XDP, btf: true, asm: asm, err: err, kmsg: err != ""}
	}
	tp := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceRawTp, attachTo: "task_newtask", asm: asm, err: err, kmsg: err != ""}
	}
	iter := func(name string, flags uint32, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "task", flags: flags, asm: asm, err: err, kmsg: err != ""}
	}
	const (
		ret0 = "r0 = 0\nexit\n"
		// words puts two u64 of bits at fp-40.
		words = "r1 = 0x8000000000000005 ll\n*(u64 *)(r10 -40) = r1\nr1 = 3\n*(u64 *)(r10 -32) = r1\n"
		// bitsNew starts a bits iterator at fp-16 over the words.
		bitsNew = words + "r1 = r10\nr1 += -16\nr2 = r10\nr2 += -40\nr3 = 2\ncall bpf_iter_bits_new#0\n"
		bitsArg = "r1 = r10\nr1 += -16\n"
		bitsEnd = bitsArg + "call bpf_iter_bits_destroy#0\n" + ret0
		// bitsLoop sums the bits' numbers into r6.
		bitsLoop = "r6 = 0\nloop: " + bitsArg + "call bpf_iter_bits_next#0\nif r0 == 0 goto done\nr1 = *(u32 *)(r0 +0)\nr6 += r1\ngoto loop\ndone: "
		ctxTask  = "r7 = *(u64 *)(r1 +0)\n"
		taskArg  = "r1 = r10\nr1 += -24\n"
		taskNew  = taskArg + "r2 = 0\nr3 = 0\ncall bpf_iter_task_new#0\n"
		taskEnd  = taskArg + "call bpf_iter_task_destroy#0\n" + ret0
		vmaArg   = "r1 = r10\nr1 += -8\n"
		vmaEnd   = vmaArg + "call bpf_iter_task_vma_destroy#0\n" + ret0
		cssArg   = "r1 = r10\nr1 += -24\n"
		// cgroup puts the root cgroup, referenced, in r8 (or returns).
		cgroup  = "r1 = 1\ncall bpf_cgroup_from_id#0\nif r0 != 0 goto +2\nr0 = 0\nexit\nr8 = r0\n"
		cgrpEnd = "r1 = r8\ncall bpf_cgroup_release#0\n" + ret0
		cssTask = "r1 = r10\nr1 += -8\n"
		rcuLock = "call bpf_rcu_read_lock#0\n"
		rcuUnl  = "call bpf_rcu_read_unlock#0\n"
	)
	// k sets the instructions the kernel processes for a case.
	k := func(c vcase, n int) vcase { c.kinsns = n; return c }
	taskLoop := func(next string) string {
		return fmt.Sprintf("loop: %scall %s#0\nif r0 == 0 goto done\nr1 = *(u32 *)(r0 +%d)\ngoto loop\ndone: ", taskArg, next, pidOff)
	}
	cases := []vcase{
		// Bits.
		k(xdp("bits loop", bitsNew+bitsLoop+bitsEnd, ""), 53),
		{name: "bits in a socket filter", typ: ebpf.SocketFilter, btf: true, asm: bitsNew + bitsLoop + bitsEnd},
		xdp("bits leak", bitsNew+ret0, "Unreleased reference id=1 alloc_insn="),
		xdp("bits new twice", bitsNew+bitsNew+bitsEnd, "expected uninitialized iter_bits as arg #0"),
		xdp("bits next uninitialized", bitsArg+"call bpf_iter_bits_next#0\n"+ret0, "expected an initialized iter_bits as arg #0"),
		xdp("bits destroy uninitialized", bitsEnd, "expected an initialized iter_bits as arg #0"),
		xdp("bits destroy twice", bitsNew+bitsArg+"call bpf_iter_bits_destroy#0\n"+bitsEnd, "expected an initialized iter_bits as arg #0"),
		xdp("bits next after destroy", bitsNew+bitsArg+"call bpf_iter_bits_destroy#0\n"+bitsArg+"call bpf_iter_bits_next#0\n"+ret0, "expected an initialized iter_bits as arg #0"),
		xdp("bits on a num iterator", "r1 = r10\nr1 += -16\nr2 = 0\nr3 = 3\ncall bpf_iter_num_new#0\n"+bitsArg+"call bpf_iter_bits_next#0\n"+ret0, "expected an initialized iter_bits as arg #0"),
		xdp("num on a bits iterator", bitsNew+"r1 = r10\nr1 += -16\ncall bpf_iter_num_next#0\n"+bitsEnd, "expected an initialized iter_num as arg #0"),
		xdp("bits at fp-8", words+"r1 = r10\nr1 += -8\nr2 = r10\nr2 += -40\nr3 = 2\ncall bpf_iter_bits_new#0\n"+ret0, "expected uninitialized iter_bits as arg #0"),
		xdp("bits misaligned", words+"r1 = r10\nr1 += -20\nr2 = r10\nr2 += -40\nr3 = 2\ncall bpf_iter_bits_new#0\n"+ret0, "expected uninitialized iter_bits as arg #0"),
		xdp("bits next at its second slot", bitsNew+"r1 = r10\nr1 += -8\ncall bpf_iter_bits_next#0\n"+bitsEnd, "expected an initialized iter_bits as arg #0"),
		xdp("bits value 8 bytes", bitsNew+bitsArg+"call bpf_iter_bits_next#0\nif r0 == 0 goto +1\nr1 = *(u64 *)(r0 +0)\n"+bitsEnd, "invalid access to memory, mem_size=4 off=0 size=8"),
		xdp("bits value write", bitsNew+bitsArg+"call bpf_iter_bits_next#0\nif r0 == 0 goto +2\nr1 = 1\n*(u32 *)(r0 +0) = r1\n"+bitsEnd, "cannot write into rdonly_mem"),
		xdp("bits value unchecked", bitsNew+bitsArg+"call bpf_iter_bits_next#0\nr1 = *(u32 *)(r0 +0)\n"+bitsEnd, "R0 invalid mem access 'scalar'"),
		xdp("bits slot read", bitsNew+"r1 = *(u64 *)(r10 -8)\n"+bitsEnd, "invalid read from stack off -8+0 size 8"),
		xdp("bits slot overwritten", bitsNew+"r1 = 0\n*(u64 *)(r10 -8) = r1\n"+bitsArg+"call bpf_iter_bits_next#0\n"+bitsEnd, "expected an initialized iter_bits as arg #0"),
		xdp("bits words pointer", bitsNew[:len(words)]+"r1 = r10\nr1 += -16\nr2 = r10\nr2 += -40\nr3 = r10\ncall bpf_iter_bits_new#0\n"+bitsEnd, "R3 is not a scalar"),
		xdp("bits any pointer", "r1 = r10\nr1 += -16\nr2 = 12345\nr3 = 1\ncall bpf_iter_bits_new#0\n"+bitsLoop+bitsEnd, ""),
		xdp("bits iterator passed on", bitsNew+"r1 = r10\nr1 += -16\nr2 = 0\nr3 = 3\ncall bpf_iter_num_new#0\n"+ret0, "expected uninitialized iter_num as arg #0"),
		xdp("bits two iterators", bitsNew+words+"r1 = r10\nr1 += -56\nr2 = r10\nr2 += -40\nr3 = 1\ncall bpf_iter_bits_new#0\n"+
			"r1 = r10\nr1 += -56\ncall bpf_iter_bits_destroy#0\n"+bitsEnd, ""),
		k(xdp("bits nested loops", bitsNew+words+"r1 = r10\nr1 += -56\nr2 = r10\nr2 += -40\nr3 = 1\ncall bpf_iter_bits_new#0\n"+
			"r6 = 0\nouter: "+bitsArg+"call bpf_iter_bits_next#0\nif r0 == 0 goto odone\n"+
			"inner: r1 = r10\nr1 += -56\ncall bpf_iter_bits_next#0\nif r0 == 0 goto outer\nr1 = *(u32 *)(r0 +0)\nr6 += r1\ngoto inner\n"+
			"odone: r1 = r10\nr1 += -56\ncall bpf_iter_bits_destroy#0\n"+bitsEnd, ""), 118),

		// Tasks, from a non-sleepable program: in an RCU section.
		k(tp("task walk", taskNew+taskLoop("bpf_iter_task_next")+taskEnd, ""), 25),
		tp("task walk threads", ctxTask+taskArg+"r2 = r7\nr3 = 2\ncall bpf_iter_task_new#0\n"+taskLoop("bpf_iter_task_next")+taskEnd, ""),
		tp("task walk leak", taskNew+ret0, "Unreleased reference id="),
		tp("task walk at fp-16", "r1 = r10\nr1 += -16\nr2 = 0\nr3 = 0\ncall bpf_iter_task_new#0\n"+ret0, "expected uninitialized iter_task as arg #0"),
		tp("task unchecked", taskNew+taskArg+"call bpf_iter_task_next#0\nr1 = *(u32 *)(r0 +0)\n"+taskEnd, "R0 invalid mem access 'scalar'"),
		tp("task acquire", taskNew+taskArg+"call bpf_iter_task_next#0\nif r0 == 0 goto done\nr1 = r0\ncall bpf_task_acquire#0\nif r0 == 0 goto done\nr1 = r0\ncall bpf_task_release#0\ndone: "+taskEnd, ""),
		tp("task scalar", taskArg+"r2 = 7\nr3 = 0\ncall bpf_iter_task_new#0\n"+taskEnd, "arg#1 pointer type STRUCT task_struct must point to scalar, or struct with scalar"),
		k(tp("task in an RCU section", rcuLock+taskNew+taskLoop("bpf_iter_task_next")+taskEnd[:len(taskEnd)-len(ret0)]+rcuUnl+ret0, ""), 28),
		tp("task after the RCU section", rcuLock+taskNew+rcuUnl+taskArg+"call bpf_iter_task_next#0\n"+taskEnd, "expected an RCU CS when using bpf_iter_task_next"),
		tp("task destroy after the RCU section", rcuLock+taskNew+rcuUnl+taskEnd, "expected an RCU CS when using bpf_iter_task_destroy"),
		tp("task on a bits iterator", taskNew+"r1 = r10\nr1 += -24\ncall bpf_iter_bits_next#0\n"+taskEnd, "expected an initialized iter_bits as arg #0"),
		tp("task mid-iterator", taskNew+"r1 = r10\nr1 += -16\ncall bpf_iter_task_next#0\n"+taskEnd, "expected an initialized iter_task as arg #0"),
		tp("task slot overwritten", taskNew+"r1 = 0\n*(u64 *)(r10 -8) = r1\n"+taskArg+"call bpf_iter_task_next#0\n"+taskEnd, "expected an initialized iter_task as arg #0"),
		iter("task sleepable without RCU", verifier.FlagSleepable, taskNew+taskEnd, "kernel func bpf_iter_task_new requires RCU critical section protection"),
		k(iter("task sleepable with RCU", verifier.FlagSleepable, rcuLock+taskNew+taskLoop("bpf_iter_task_next")+taskEnd[:len(taskEnd)-len(ret0)]+rcuUnl+ret0, ""), 28),

		// A task's memory areas.
		k(tp("vma walk", ctxTask+vmaArg+"r2 = r7\nr3 = 0\ncall bpf_iter_task_vma_new#0\n"+
			fmt.Sprintf("loop: %scall bpf_iter_task_vma_next#0\nif r0 == 0 goto done\nr1 = *(u64 *)(r0 +%d)\ngoto loop\ndone: ", vmaArg, vmStartOff)+vmaEnd, ""), 21),
		tp("vma of NULL", vmaArg+"r2 = 0\nr3 = 0\ncall bpf_iter_task_vma_new#0\n"+vmaEnd, "Possibly NULL pointer passed to trusted arg1"),
		tp("vma of a scalar", vmaArg+"r2 = 8\nr3 = 0\ncall bpf_iter_task_vma_new#0\n"+vmaEnd, "arg#1 pointer type STRUCT task_struct must point to scalar, or struct with scalar"),

		// Cgroups.
		k(tp("css walk", cgroup+cssArg+"r2 = r8\nr3 = 1\ncall bpf_iter_css_new#0\nloop: "+cssArg+"call bpf_iter_css_next#0\nif r0 == 0 goto done\nr1 = *(u64 *)(r0 +0)\ngoto loop\ndone: "+cssArg+"call bpf_iter_css_destroy#0\n"+cgrpEnd, ""), 35),
		tp("css of NULL", cssArg+"r2 = 0\nr3 = 1\ncall bpf_iter_css_new#0\n"+cssArg+"call bpf_iter_css_destroy#0\n"+ret0, "Possibly NULL pointer passed to trusted arg1"),
		tp("css task in tp_btf", cgroup+cssTask+"r2 = r8\nr3 = 0\ncall bpf_iter_css_task_new#0\n"+cssTask+"call bpf_iter_css_task_destroy#0\n"+cgrpEnd, "css_task_iter is only allowed in bpf_lsm, bpf_iter and sleepable progs"),
		k(iter("css task in an iterator", 0, cgroup+cssTask+"r2 = r8\nr3 = 0\ncall bpf_iter_css_task_new#0\n"+
			fmt.Sprintf("loop: %scall bpf_iter_css_task_next#0\nif r0 == 0 goto done\nr1 = *(u32 *)(r0 +%d)\ngoto loop\ndone: ", cssTask, pidOff)+cssTask+"call bpf_iter_css_task_destroy#0\n"+cgrpEnd, ""), 28),
		iter("css task sleepable", verifier.FlagSleepable, cgroup+cssTask+"r2 = r8\nr3 = 0\ncall bpf_iter_css_task_new#0\n"+cssTask+"call bpf_iter_css_task_destroy#0\n"+cgrpEnd, ""),
	}
	runCases(t, cases)
}

// TestIterBuffers: map iterators' key and value buffers (PTR_TO_BUF), as
// the kernel's check_buffer_access: maybe NULL until checked, the key
// read-only, constant non-negative offsets only, and the furthest access
// recorded for the attach (Result.MaxRdonlyAccess, MaxRdwrAccess). The
// kernel refuses these iterators here (EPERM), so the cases compare with
// 6.18's source (noKernel: its refusal comes with a log).
func TestIterBuffers(t *testing.T) {
	elem := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "bpf_map_elem", asm: asm, err: err, noKernel: true}
	}
	const (
		key   = "r2 = *(u64 *)(r1 +16)\n"
		value = "r3 = *(u64 *)(r1 +24)\n"
		ret0  = "r0 = 0\nexit\n"
	)
	cases := []vcase{
		elem("key unchecked", key+"r0 = *(u32 *)(r2 +0)\n"+ret0, "R2 invalid mem access 'rdonly_buf_or_null'"),
		elem("key read", key+"if r2 == 0 goto +1\nr0 = *(u32 *)(r2 +0)\n"+ret0, ""),
		elem("key write", key+"if r2 == 0 goto +2\nr0 = 1\n*(u32 *)(r2 +0) = r0\n"+ret0, "R2 cannot write into rdonly_buf"),
		elem("value write", value+"if r3 == 0 goto +2\nr0 = 1\n*(u64 *)(r3 +0) = r0\n"+ret0, ""),
		elem("value negative", value+"if r3 == 0 goto +1\nr0 = *(u32 *)(r3 -4)\n"+ret0, "R3 invalid rdwr buffer access: off=-4, size=4"),
		elem("key negative", key+"if r2 == 0 goto +1\nr0 = *(u32 *)(r2 -4)\n"+ret0, "R2 invalid rdonly buffer access: off=-4, size=4"),
		elem("value moved", value+"if r3 == 0 goto +2\nr3 += 8\nr0 = *(u64 *)(r3 +0)\n"+ret0, ""),
		elem("value variable", value+"if r3 == 0 goto +5\nr4 = *(u64 *)(r1 +0)\nr4 = *(u64 *)(r4 +16)\nr4 &= 8\nr3 += r4\nr0 = *(u64 *)(r3 +0)\n"+ret0, "R3 invalid variable buffer offset: off=0, var_off=(0x0; 0x8)"),
		elem("value arithmetic unchecked", value+"r3 += 8\n"+ret0, "R3 pointer arithmetic on buf_or_null prohibited, null-check it first"),
		elem("key to seq_write", "r6 = r1\n"+key+"if r2 == 0 goto +4\nr1 = *(u64 *)(r6 +0)\nr1 = *(u64 *)(r1 +0)\nr3 = 12\ncall 127\n"+ret0, ""),
		elem("key to strtol", key+"if r2 == 0 goto +6\nr1 = r2\nr4 = r10\nr4 += -8\nr2 = 4\nr3 = 0\ncall 105\n"+ret0, ""),
		elem("value from strtol", value+"if r3 == 0 goto +8\nr4 = r3\nr1 = 0\n*(u64 *)(r10 -8) = r1\nr1 = r10\nr1 += -8\nr2 = 4\nr3 = 0\ncall 105\n"+ret0, ""),
		elem("key from strtol", key+"if r2 == 0 goto +8\nr4 = r2\nr1 = 0\n*(u64 *)(r10 -8) = r1\nr1 = r10\nr1 += -8\nr2 = 4\nr3 = 0\ncall 105\n"+ret0, "R4 cannot write into rdonly_buf"),
		elem("map trusted", "r2 = *(u64 *)(r1 +8)\nr0 = *(u32 *)(r2 +0)\n"+ret0, ""),
		{name: "sockmap key", typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "sockmap", asm: key + "if r2 == 0 goto +1\nr0 = *(u32 *)(r2 +0)\n" + ret0, noKernel: true},
		{name: "sk storage value", typ: ebpf.Tracing, attach: ebpf.AttachTraceIter, attachTo: "bpf_sk_storage_map", asm: value + "if r3 == 0 goto +2\nr0 = 1\n*(u32 *)(r3 +4) = r0\n" + ret0, noKernel: true},
	}
	runCases(t, cases)
	// The furthest accesses, for the attach.
	spec := hostBTF(t)
	target, err := verifier.ResolveAttach(spec, ebpf.AttachTraceIter, "bpf_map_elem")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		asm          string
		rdonly, rdwr uint32
	}{
		{key + "if r2 == 0 goto +1\nr0 = *(u32 *)(r2 +0)\n" + ret0, 4, 0},
		{value + "if r3 == 0 goto +2\nr3 += 8\nr0 = *(u64 *)(r3 +4)\n" + ret0, 0, 20},
		{"r6 = r1\n" + key + "if r2 == 0 goto +4\nr1 = *(u64 *)(r6 +0)\nr1 = *(u64 *)(r1 +0)\nr3 = 12\ncall 127\n" + ret0, 12, 0},
	} {
		insns, err := isa.Assemble(c.asm)
		if err != nil {
			t.Fatal(err)
		}
		res, err := verifier.Verify(insns, verifier.Options{Type: progTypeAttach(ebpf.Tracing, ebpf.AttachTraceIter), KernelTypes: spec, Attach: target})
		if err != nil {
			t.Fatalf("%s: %v", c.asm, err)
		}
		if res.MaxRdonlyAccess != c.rdonly || res.MaxRdwrAccess != c.rdwr {
			t.Errorf("%s: furthest %d, %d; want %d, %d", c.asm, res.MaxRdonlyAccess, res.MaxRdwrAccess, c.rdonly, c.rdwr)
		}
	}
}
