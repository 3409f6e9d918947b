package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

// TestCurrentTaskBTF: bpf_get_current_task_btf gives a trusted task_struct,
// never NULL, read-only, with CAP_PERFMON only.
func TestCurrentTaskBTF(t *testing.T) {
	task, _ := hostStruct(t, hostBTF(t), "task_struct")
	pid := memberOff(t, task, "pid")
	call := "call 158\n"
	cases := []vcase{
		{name: "kprobe reads the pid", typ: ebpf.Kprobe, btf: true, asm: call + fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nexit", pid)},
		{name: "tracepoint reads the pid", typ: ebpf.TracePoint, btf: true, asm: call + fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nr0 = 0\nexit", pid)},
		{name: "store to the task", typ: ebpf.Kprobe, btf: true, asm: call + fmt.Sprintf("r1 = 0\n*(u32 *)(r0 +%d) = r1\nr0 = 0\nexit", pid), err: "only read is supported", kmsg: true},
		{name: "task returned", typ: ebpf.Kprobe, btf: true, asm: call + "exit"},
		// bpf_base_func_proto gives it to CAP_PERFMON loads of any type.
		{name: "in xdp too", btf: true, asm: call + fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nr0 = 0\nexit", pid)},
		{name: "not unprivileged", btf: true, unpriv: true, asm: call + "r0 = 0\nexit", err: "bpf_get_current_task_btf#158"},
		{name: "seq_write outside iterators", typ: ebpf.Kprobe, btf: true, asm: call + "r1 = r0\nr2 = r10\nr2 += -8\nr3 = 0\ncall 127\nr0 = 0\nexit", err: "program of this type cannot use helper bpf_seq_write#127", kmsg: true},
	}
	runCases(t, cases)
}
