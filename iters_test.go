package bpfvm_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/progtype"
)

// bitsCase is one run of testdata/iters.o's bits: the words, how many
// the iterator takes and where it reads them (0 the words, 1 NULL, 2 a
// user address).
type bitsCase struct {
	name  string
	words []uint64
	nr    uint32
	ptr   uint32
}

// bitsCases cover the iterator's edges: no words, one (the inline copy),
// several, the most it takes (511) and one more, NULL and memory that
// does not read, empty and full words, the top bit.
func bitsCases() []bitsCase {
	full := make([]uint64, 520)
	for i := range full {
		full[i] = ^uint64(0)
	}
	sparse := make([]uint64, 520)
	for i := range sparse {
		sparse[i] = 1<<uint(i%64) | 1<<63>>uint(i%7)
	}
	var cs []bitsCase
	for _, w := range []struct {
		name  string
		words []uint64
	}{
		{"zero", nil}, {"one", []uint64{1}}, {"top", []uint64{1 << 63, 1 << 63}}, {"mixed", []uint64{0x8000000000000005, 3, 0, 1 << 40}},
		{"full", full}, {"sparse", sparse},
	} {
		for _, nr := range []uint32{0, 1, 2, 4, 64, 511, 512} {
			cs = append(cs, bitsCase{fmt.Sprintf("%s/%d", w.name, nr), w.words, nr, 0})
		}
	}
	cs = append(cs,
		bitsCase{"null/1", full, 1, 1}, bitsCase{"null/2", full, 2, 1}, bitsCase{"null/0", full, 0, 1},
		bitsCase{"user/1", full, 1, 2}, bitsCase{"user/2", full, 2, 2}, bitsCase{"user/600", full, 600, 2},
	)
	return cs
}

// bitsModel is bpf_iter_bits as the kernel defines it: new's result, the
// number of set bits and the program's hash of their numbers.
func bitsModel(c bitsCase) (ret int64, n, hash uint64) {
	switch {
	case c.ptr == 1 || c.nr == 0:
		return -22, 0, 0
	case c.nr > 511:
		return -7, 0, 0
	case c.ptr == 2 && c.nr == 1:
		return -14, 0, 0
	case c.ptr == 2:
		return -34, 0, 0 // -ERANGE: not a kernel address
	}
	for b := range 64 * int(c.nr) {
		if b/64 < len(c.words) && c.words[b/64]>>(b%64)&1 != 0 {
			n++
			hash = hash*31 + uint64(b)
		}
	}
	return 0, n, hash
}

// setBits writes a case's inputs to a collection's globals.
func setBits(t *testing.T, set func(name string, v any) error, c bitsCase) {
	t.Helper()
	words := make([]uint64, 520)
	copy(words, c.words)
	for _, kv := range []struct {
		name string
		v    any
	}{{"words", words}, {"nr_words", c.nr}, {"ptr_kind", c.ptr}} {
		if err := set(kv.name, kv.v); err != nil {
			t.Fatalf("%s: %v", kv.name, err)
		}
	}
}

// TestIterBits runs testdata/iters.o's bits over words of every shape on
// both engines, checked and not, against the kernel's definition and,
// where bpf() works, the kernel's own runs of the same object.
func TestIterBits(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	spec, err := loader.LoadCollectionSpec("testdata/iters.o")
	if err != nil {
		t.Fatal(err)
	}
	kern := kernelCollection(t, "testdata/iters.o")
	type result struct {
		ret     int64
		n, hash uint64
	}
	kernelRes := map[string]result{}
	if kern != nil {
		for _, c := range bitsCases() {
			setBits(t, func(name string, v any) error { return kern.Variables[name].Set(v) }, c)
			if _, ok := kernelRun(t, kern, "bits", make([]byte, 64), nil); !ok {
				break
			}
			var r result
			for _, g := range []struct {
				name string
				out  any
			}{{"bits_ret", &r.ret}, {"bits_n", &r.n}, {"bits_hash", &r.hash}} {
				if err := kern.Variables[g.name].Get(g.out); err != nil {
					t.Fatal(err)
				}
			}
			kernelRes[c.name] = r
		}
	}
	agree := 0
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range bitsCases() {
				setBits(t, func(name string, v any) error { return coll.Variables[name].Set(v) }, c)
				if _, err := coll.Programs["bits"].Execute(&bpfvm.RunOptions{Data: make([]byte, 64)}); err != nil {
					t.Fatalf("%s on %v checks %v: %v", c.name, e, checks, err)
				}
				var r result
				coll.Variables["bits_ret"].Get(&r.ret)
				coll.Variables["bits_n"].Get(&r.n)
				coll.Variables["bits_hash"].Get(&r.hash)
				ret, n, hash := bitsModel(c)
				if want := (result{ret, n, hash}); r != want {
					t.Errorf("%s on %v checks %v: %+v, want %+v", c.name, e, checks, r, want)
				}
				if k, ok := kernelRes[c.name]; ok && e == bpfvm.EngineInterpreter && checks == bpfvm.ChecksOn {
					if k != r {
						t.Errorf("%s: kernel %+v, bpfvm %+v", c.name, k, r)
					} else {
						agree++
					}
				}
			}
			coll.Close()
		}
	}
	if len(kernelRes) > 0 {
		t.Logf("bits runs equal to the kernel's: %d/%d", agree, len(kernelRes))
	}
}

// iterWorld is a world of tasks, memory areas and cgroups for iters.o's
// tracing programs: init_task, two processes (one of three threads) and a
// kernel thread, in cgroups 1 (the root), 10 and 11 (10's child).
func iterWorld(t *testing.T) (*bpfvm.Trace, *bpfvm.Net) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("host BTF: %v", err)
	}
	var ts *btf.Struct
	if err := spec.TypeByName("task_struct", &ts); err != nil {
		t.Fatal(err)
	}
	for _, m := range ts.Members {
		if m.Name == "pid" {
			taskPidOff = int(m.Offset.Bytes())
		}
	}
	const base = 0xffff888000100000
	task := func(i int, pid, tgid uint32, cg uint64, vmas []bpfvm.VMA) bpfvm.TaskInfo {
		return bpfvm.TaskInfo{Addr: base + uint64(i)<<12, PID: pid, TGID: tgid, CgroupID: cg, VMAs: vmas}
	}
	vmas := []bpfvm.VMA{{Addr: base + 0x80000, Start: 0x400000, End: 0x401000}, {Addr: base + 0x81000, Start: 0x600000, End: 0x602000}, {Addr: base + 0x82000, Start: 0x7ff000, End: 0x800000}}
	tasks := []bpfvm.TaskInfo{
		task(0, 0, 0, 1, nil),
		task(1, 1, 1, 1, vmas[:1]),
		task(2, 7, 7, 10, vmas),
		task(3, 8, 7, 10, vmas),
		task(4, 9, 7, 11, vmas),
		task(5, 20, 20, 11, nil),
	}
	tr := &bpfvm.Trace{Tasks: tasks, TaskStruct: tasks[2].Addr, Task: &bpfvm.Task{PID: 7, TGID: 7, CgroupID: 10}}
	// Each task's pid and tgid where the target BTF puts them, each
	// memory area's bounds, each cgroup's level.
	for _, ti := range tasks {
		img := make([]byte, 4096)
		binary.LittleEndian.PutUint32(img[taskPidOff:], ti.PID)
		binary.LittleEndian.PutUint32(img[taskPidOff+4:], ti.TGID)
		tr.Memory = append(tr.Memory, bpfvm.TraceMemory{Addr: ti.Addr, Data: img})
	}
	for _, m := range vmas {
		img := make([]byte, 16)
		binary.LittleEndian.PutUint64(img, m.Start)
		binary.LittleEndian.PutUint64(img[8:], m.End)
		tr.Memory = append(tr.Memory, bpfvm.TraceMemory{Addr: m.Addr, Data: img})
	}
	net := &bpfvm.Net{Cgroups: []bpfvm.Cgroup{{ID: 10, Parent: 1}, {ID: 11, Parent: 10}, {ID: 12, Parent: 1}}}
	return tr, net
}

// taskPidOff is where the host's task_struct holds pid (tgid follows
// it).
var taskPidOff int

// hash31 is iters.o's hash of what a walk gave.
func hash31[T int32 | uint64](vs []T) uint64 {
	var h uint64
	for _, v := range vs {
		h = h*31 + uint64(int64(v))
	}
	return h
}

// TestIterTasksOpenCoded walks the world's tasks, memory areas and
// cgroups with the open-coded iterators on both engines, checked and not.
func TestIterTasksOpenCoded(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/iters.o")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	trace, net := iterWorld(t)
	ctx := make([]byte, 8*progtype.MaxTracingArgs)
	binary.LittleEndian.PutUint64(ctx, trace.TaskStruct)
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			get := func(name string, out any) {
				t.Helper()
				if err := coll.Variables[name].Get(out); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			exec := func(prog string) {
				t.Helper()
				if _, err := coll.Programs[prog].Execute(&bpfvm.RunOptions{Context: ctx, Trace: trace, Net: net}); err != nil {
					t.Fatalf("%s on %v checks %v: %v", prog, e, checks, err)
				}
			}
			for _, c := range []struct {
				flags uint32
				ret   int64
				pids  []int32
			}{
				{0, 0, []int32{0, 1, 7, 20}},
				{1, 0, []int32{0, 1, 7, 8, 9, 20}},
				{2, 0, []int32{7, 8, 9}},
				{3, -22, nil},
			} {
				coll.Variables["task_flags"].Set(c.flags)
				exec("tasks")
				var ret int64
				var n, hash uint64
				get("tasks_ret", &ret)
				get("tasks_n", &n)
				get("tasks_hash", &hash)
				if ret != c.ret || int(n) != len(c.pids) || hash != hash31(c.pids) {
					t.Errorf("tasks(%d) on %v checks %v: %d, %d tasks (hash %#x); want %d, %v (%#x)", c.flags, e, checks, ret, n, hash, c.ret, c.pids, hash31(c.pids))
				}
			}
			for _, c := range []struct {
				addr   uint64
				starts []uint64
			}{
				{0, []uint64{0x400000, 0x600000, 0x7ff000}},
				{0x600000, []uint64{0x600000, 0x7ff000}},
				{0x601fff, []uint64{0x600000, 0x7ff000}},
				{0x602000, []uint64{0x7ff000}},
				{0x800000, nil},
			} {
				coll.Variables["vma_addr"].Set(c.addr)
				exec("vmas")
				var ret int64
				var n, hash uint64
				get("vmas_ret", &ret)
				get("vmas_n", &n)
				get("vmas_hash", &hash)
				if ret != 0 || int(n) != len(c.starts) || hash != hash31(c.starts) {
					t.Errorf("vmas(%#x) on %v checks %v: %d, %d areas (hash %#x); want %x (%#x)", c.addr, e, checks, ret, n, hash, c.starts, hash31(c.starts))
				}
			}
			for _, c := range []struct {
				order uint32
				ret   int64
				n     uint64
			}{{1, 0, 4}, {2, 0, 4}, {3, 0, 1}, {0, -22, 0}, {4, -22, 0}} {
				coll.Variables["css_order"].Set(c.order)
				exec("cgroups")
				var ret int64
				var n uint64
				get("css_ret", &ret)
				get("css_n", &n)
				if ret != c.ret || n != c.n {
					t.Errorf("cgroups(%d) on %v checks %v: %d, %d; want %d, %d", c.order, e, checks, ret, n, c.ret, c.n)
				}
			}
			for _, c := range []struct {
				cg    uint64
				flags uint32
				ret   int64
				n     uint64
			}{{10, 0, 0, 2}, {11, 0, 0, 2}, {11, 1, 0, 1}, {1, 0, 0, 2}, {12, 0, 0, 0}, {10, 4, -22, 0}} {
				coll.Variables["cgroup_task_id"].Set(c.cg)
				coll.Variables["cgroup_task_flags"].Set(c.flags)
				coll.Variables["cgroup_tasks_n"].Set(uint64(99))
				r, err := coll.Programs["cgroup_tasks"].Iterate(&bpfvm.IterOptions{Trace: trace, Net: net})
				if err != nil || r == nil {
					t.Fatalf("cgroup_tasks: %v", err)
				}
				var ret int64
				var n uint64
				get("cgroup_tasks_ret", &ret)
				get("cgroup_tasks_n", &n)
				if ret != c.ret || n != c.n {
					t.Errorf("cgroup_tasks(%d, %d) on %v checks %v: %d, %d; want %d, %d", c.cg, c.flags, e, checks, ret, n, c.ret, c.n)
				}
			}
			coll.Close()
		}
	}
	if haveKernel(t) {
		kernelFirstTask(t, spec)
	}
}
