package bpfvm_test

import (
	"io"
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
)

// TestIterTasks runs testdata/iter.o's task iterator over a recorded list
// of tasks on both engines, checked and not: the seq_file output and the
// map. The kernel runs the same object over its own tasks: its output has
// the same shape (a header, one line per task, the last task's number).
func TestIterTasks(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	spec, err := loader.LoadCollectionSpec("testdata/iter.o")
	if err != nil {
		t.Fatal(err)
	}
	if ps := spec.Programs["dump_task"]; ps.AttachType != ebpf.AttachTraceIter || ps.AttachTo != "task" {
		t.Fatalf("dump_task: %s %q", ps.AttachType, ps.AttachTo)
	}
	tasks := []bpfvm.Task{{PID: 1, TGID: 1, Comm: "init"}, {PID: 42, TGID: 40, Comm: "a-rather-long-command-name"}}
	const want = "tgid pid comm\n1 1 init\n40 42 a-rather-long-c\nlast 1\n"
	for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := coll.Programs["dump_task"].Iterate(&bpfvm.IterOptions{Tasks: tasks})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			if string(got) != want {
				t.Errorf("%v checks %v: output %q, want %q", e, checks, got, want)
			}
			var seen uint64
			if err := coll.Maps["seen"].Lookup(uint32(0), &seen); err != nil || seen != 2 {
				t.Errorf("%v checks %v: seen %d, %v; want 2", e, checks, seen, err)
			}
			if _, err := coll.Programs["dump_task"].Iterate(&bpfvm.IterOptions{}); err != nil {
				t.Errorf("no tasks: %v", err)
			}
			for _, c := range []struct {
				mem  []bpfvm.TraceMemory
				want string
			}{
				{[]bpfvm.TraceMemory{{Addr: 0x10000, Data: []byte("hello!!?"), User: true}}, "user hello!!\n"},
				{nil, "error -14\n"},
			} {
				r, err := coll.Programs["read_user"].Iterate(&bpfvm.IterOptions{Tasks: tasks, Trace: &bpfvm.Trace{Memory: c.mem}})
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := io.ReadAll(r); string(got) != c.want {
					t.Errorf("read_user on %v checks %v: %q, want %q", e, checks, got, c.want)
				}
			}
			coll.Close()
		}
	}
	if haveKernel(t) {
		kernelIterTasks(t, spec)
	}
}
