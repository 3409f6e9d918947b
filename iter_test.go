package bpfvm_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

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
	if !haveKernel(t) {
		return
	}
	kc, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("kernel: %v", err)
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	defer kc.Close()
	// The kernel's read_user reads this process's memory at 0x10000,
	// which is not mapped: the error bpfvm gives without the memory.
	if ru, err := link.AttachIter(link.IterOptions{Program: kc.Programs["read_user"]}); err == nil {
		rd, err := ru.Open()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(rd)
		rd.Close()
		ru.Close()
		if string(out) != "error -14\n" {
			t.Errorf("kernel read_user: %q, want %q", out, "error -14\n")
		}
	}
	it, err := link.AttachIter(link.IterOptions{Program: kc.Programs["dump_task"]})
	if err != nil {
		t.Skipf("kernel attach: %v", err)
	}
	defer it.Close()
	rd, err := it.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	out, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 3 || lines[0] != "tgid pid comm" || lines[len(lines)-1] != fmt.Sprintf("last %d", len(lines)-3) {
		t.Errorf("kernel output of another shape (%d lines, last %q):\n%.300s", len(lines), lines[len(lines)-1], out)
	}
	var tgid, pid int
	var comm string
	if _, err := fmt.Sscanf(lines[1], "%d %d %s", &tgid, &pid, &comm); err != nil {
		t.Errorf("kernel's first task %q: %v", lines[1], err)
	}
}
