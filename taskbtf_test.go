package bpfvm_test

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
)

// TestCurrentTaskBTFRun: bpf_get_current_task_btf returns the world's
// task_struct address on both engines, checked and not, and loads through
// it read 0 where the run's memory does not hold the task.
func TestCurrentTaskBTFRun(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	prog, err := isa.Assemble("call 158\nr6 = r0\nr0 = *(u32 *)(r6 +0)\nr0 += r6\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			p, err := bpfvm.NewRawProgram("task", ebpf.Kprobe, prog, bpfvm.ProgramOptions{Engine: e, Checks: checks})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Execute(&bpfvm.RunOptions{Context: make([]byte, 168), Trace: &bpfvm.Trace{TaskStruct: 0xffff888012340000}})
			p.Close()
			if err != nil || res.R0 != 0xffff888012340000 {
				t.Errorf("%v checks %v: %#x, %v", e, checks, res.R0, err)
			}
		}
	}
}

// TestFuncArgsRun: bpf_get_func_arg_cnt, bpf_get_func_arg and
// bpf_get_func_ret of an fmod_ret program (which may return any value) at
// bpf_modify_return_test(int, int *): 2 slots, the second argument,
// -EINVAL past them, the return value after them; both engines, checked
// and not.
func TestFuncArgsRun(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	prog, err := isa.Assemble(`r6 = r1
call 185
r7 = r0
r1 = r6
r2 = 1
r3 = r10
r3 += -8
call 183
r7 += r0
r1 = r6
r2 = 2
r3 = r10
r3 += -16
call 183
r0 += 22
r0 <<= 12
r7 += r0
r1 = r6
r2 = r10
r2 += -24
r3 = 0
*(u64 *)(r10 -24) = r3
call 184
r8 = r0
r0 = *(u64 *)(r10 -8)
r0 <<= 4
r7 += r0
r0 = *(u64 *)(r10 -24)
r0 <<= 8
r7 += r0
r0 = r7
r8 <<= 16
r0 += r8
exit`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := make([]byte, 96)
	ctx[0], ctx[8], ctx[16] = 5, 7, 9
	for _, c := range []struct {
		attach ebpf.AttachType
		want   uint64
	}{
		{ebpf.AttachModifyReturn, 2 + 7<<4 + 9<<8},
	} {
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
				p, err := bpfvm.NewRawProgram("args", ebpf.Tracing, prog, bpfvm.ProgramOptions{Engine: e, Checks: checks, AttachType: c.attach, AttachTo: "bpf_modify_return_test"})
				if err != nil {
					t.Fatal(err)
				}
				res, err := p.Execute(&bpfvm.RunOptions{Context: ctx})
				p.Close()
				if err != nil || res.R0 != c.want {
					t.Errorf("%s on %v checks %v: %#x, %v; want %#x", c.attach, e, checks, res.R0, err, c.want)
				}
			}
		}
	}
}
