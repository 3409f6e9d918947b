package bpfvm_test

import (
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// A verified program reads and writes arena pages user space wrote
// through the map's Memory, at the pages' user addresses, on both engines
// (the JIT's code blinded or not) and in checked mode;
// an access in the arena's window past its pages stays there. The arena
// kfuncs, sleepable in the kernel, are refused in tc programs as the
// kernel refuses them, and run unverified.
func TestArenaRuns(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/arena.o")
	if err != nil {
		t.Fatal(err)
	}
	const msg = "program must be sleepable to call sleepable kfunc bpf_arena_alloc_pages"
	if _, err := bpfvm.NewCollection(spec); err == nil || !strings.Contains(err.Error(), msg) {
		t.Errorf("loaded, or not for the kfunc: %v", err)
	}
	if haveKernel(t) {
		// Only the program without casts: cilium/ebpf's encoder drops
		// their offset.
		ks := spec.Copy()
		delete(ks.Programs, "arena_peek")
		if _, kerr := ebpf.NewCollection(ks); kerr == nil || !strings.Contains(kerr.Error(), "sleepable") {
			t.Errorf("kernel: %v", kerr)
		}
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksDefault, bpfvm.ChecksOn, blinded} {
			opts := bpfvm.CollectionOptions{ProgramNames: []string{"arena_peek"}, Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}}
			if checks == blinded {
				opts.Programs.Checks, opts.Programs.JIT.Blind = bpfvm.ChecksDefault, true
			}
			vm, err := bpfvm.NewCollectionWithOptions(spec, opts)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := vm.Maps["arena"].Memory()
			if err != nil {
				t.Fatal(err)
			}
			if mem.Size() != 8*4096 {
				t.Errorf("%s: user view of %d bytes, want %d", e, mem.Size(), 8*4096)
			}
			if _, err := mem.WriteAt(binary.LittleEndian.AppendUint32(nil, 1234), 3*4096+16); err != nil {
				t.Fatal(err)
			}
			p := vm.Programs["arena_peek"]
			if _, _, jit := p.NativeCode(); jit != (e == bpfvm.EngineJIT && runtime.GOARCH == "amd64" && runtime.GOOS == "linux") {
				t.Errorf("%s: compiled %v", e, jit)
			}
			for i, want := range []uint32{1234, 1234 + 7, 1234 + 14} {
				if got := run(t, p, []byte{7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil); got.ret != want {
					t.Errorf("%s %s run %d: returned %d, want %d", e, checks, i, got.ret, want)
				}
			}
			b := make([]byte, 4)
			if _, err := mem.ReadAt(b, 3*4096+16); err != nil || binary.LittleEndian.Uint32(b) != 1234+21 {
				t.Errorf("%s: user view %d (%v), want %d", e, binary.LittleEndian.Uint32(b), err, 1234+21)
			}
			vm.Close()
		}
		vm := loadVM(t, true, "testdata/arena.o", bpfvm.CollectionOptions{ProgramNames: []string{"arena_alloc_free"}, Programs: bpfvm.ProgramOptions{Engine: e}})
		if got := run(t, vm.Programs["arena_alloc_free"], make([]byte, 14), nil); got.ret != 8 {
			t.Errorf("%s arena_alloc_free: returned %d, want 8", e, got.ret)
		}
	}
}

// blinded stands for JIT constant blinding in TestArenaRuns' loop.
const blinded bpfvm.Checks = -1

// BenchmarkArenaAllocFree is the rate of bpf_arena_alloc_pages and
// bpf_arena_free_pages pairs (two pages each) of a program on the JIT: 8
// pairs per run.
func BenchmarkArenaAllocFree(b *testing.B) {
	for _, e := range []bpfvm.Engine{bpfvm.EngineJIT, bpfvm.EngineInterpreter} {
		b.Run(e.String(), func(b *testing.B) {
			spec, err := loader.LoadCollectionSpec("testdata/arena.o")
			if err != nil {
				b.Fatal(err)
			}
			opts := bpfvm.CollectionOptions{ProgramNames: []string{"arena_alloc_free"}, Programs: bpfvm.ProgramOptions{Engine: e, NoVerify: true}}
			vm, err := bpfvm.NewCollectionWithOptions(spec, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer vm.Close()
			p := vm.Programs["arena_alloc_free"]
			data := make([]byte, 14)
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.Execute(&bpfvm.RunOptions{Data: data}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(8*b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
