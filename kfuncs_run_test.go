package bpfvm_test

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// waitObjects reclaims deferred frees until the kernel-object table is
// back to n live objects, or fails.
func waitObjects(t *testing.T, n int, what string) {
	t.Helper()
	for range 200 {
		maps.Reclaim()
		if maps.LiveObjects() <= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("%s: %d kernel objects alive, want %d", what, maps.LiveObjects(), n)
}

// testdata/kfuncs.c's programs run on both engines, checked and unchecked,
// with the kfuncs' results: tasks from the world (Trace), cgroups by id,
// cpumask arithmetic, a cpumask stashed in a map with bpf_kptr_xchg and
// read through its RCU kptr. Every object is freed when its last
// reference goes, the stashed one when the map goes; the kernel accepts
// every program.
func TestKfuncPrograms(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	spec, err := loader.LoadCollectionSpec("testdata/kfuncs.o")
	if err != nil {
		t.Fatal(err)
	}
	const task = 0xffff888012340000
	trace := &bpfvm.Trace{TaskStruct: task, Task: &bpfvm.Task{PID: 42, TGID: 42, CgroupID: 1}}
	ctx := func(flags uint64) []byte {
		b := make([]byte, 8*progtype.MaxTracingArgs)
		binary.LittleEndian.PutUint64(b, task)
		binary.LittleEndian.PutUint64(b[8:], flags)
		return b
	}
	base := maps.LiveObjects()
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			exec := func(name string, flags uint64) int64 {
				t.Helper()
				res, err := coll.Programs[name].Execute(&bpfvm.RunOptions{Context: ctx(flags), Trace: trace})
				if err != nil {
					t.Fatalf("%s on %v checks %v: %v", name, e, checks, err)
				}
				return int64(int32(res.R0))
			}
			steps := []struct {
				prog  string
				flags uint64
				want  int64
			}{
				{"task_acquire", 0, 1},
				{"task_lookup", 0, 1},
				{"parent_rcu", 0, 0}, // the world maps no parent: NULL
				{"cgroups", 0, 7},
				{"masks", 0, 1},
				{"read_stash", 0, 0},
				{"stash_mask", 1, 0},
				{"read_stash", 0, 2},
				{"stash_mask", 0, 1},
				{"read_stash", 0, 1},
				{"take_stash", 0, 1},
				{"take_stash", 0, 0},
				{"stash_mask", 1, 0}, // left for the map's destructor
			}
			for _, s := range steps {
				if got := exec(s.prog, s.flags); got != s.want {
					t.Errorf("%s(%d) on %v checks %v: %d, want %d", s.prog, s.flags, e, checks, got, s.want)
				}
			}
			want := []uint64{1, 2, 2, 1, 1, 0, 1, 1, 0, 1}
			for k, w := range want {
				var v uint64
				if err := coll.Maps["out"].Lookup(uint32(k), &v); err != nil || v != w {
					t.Errorf("masks out[%d] on %v checks %v: %d, %v; want %d", k, e, checks, v, err, w)
				}
			}
			if n := maps.LiveObjects(); n != base+1 {
				t.Errorf("on %v checks %v: %d objects alive with one stashed, want %d", e, checks, n, base+1)
			}
			coll.Close()
			waitObjects(t, base, "after close")
		}
	}
	if !haveKernel(t) {
		return
	}
	kern, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("kernel: %v", err)
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	kern.Close()
}
