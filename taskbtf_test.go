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
