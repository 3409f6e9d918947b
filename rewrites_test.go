package bpfvm_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/jit/amd64"
	"github.com/bpfvm/bpfvm/loader"
)

// The rewrites of verified programs compose: each addresses instructions
// through the patcher's mapping, so an inlined bpf_loop calls its own
// callback after inlined lookups, other inlined loops, subprograms and the
// may_goto prologues moved the code. Every program of rewrites.c returns
// the kernel's result on both engines, with and without inlining, verified
// and in checked mode.
func TestRewritesCompose(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/rewrites.o")
	if err != nil {
		t.Fatal(err)
	}
	kern := kernelSpec(t, spec)
	arr := map[uint32]uint64{0: 10, 1: 20, 2: 30, 3: 40}
	hash := map[uint32]uint64{1: 1000, 2: 2000}
	// A JIT without executable memory: the programs are rewritten for the
	// interpreter instead, every rewrite again.
	noMemory := bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, JIT: bpfvm.JITOptions{Memory: amd64.NewMemory(amd64.MemoryConfig{NearLimit: 1, FarLimit: -1})}}
	configs := append([]bpfvm.ProgramOptions{{NoVerify: true}, noMemory}, inlineConfigs...)
	for _, o := range configs {
		cfg := configName(o) + checkedName(o)
		if o.JIT.Memory != nil {
			cfg += "-nomemory"
		}
		c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: o})
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		t.Cleanup(c.Close)
		fill(t, c, kern, "arr", arr)
		fill(t, c, kern, "hash", hash)
		for _, name := range sortedNames(spec.Programs) {
			p := c.Programs[name]
			if !o.NoVerify && !p.Verified() {
				t.Fatalf("%s: %s not verified", cfg, name)
			}
			if o.JIT.Memory != nil {
				if p.Engine() != bpfvm.EngineInterpreter {
					t.Fatalf("%s runs on %s without executable memory", name, p.Engine())
				}
				if slices.ContainsFunc(p.XlatedInstructions(), func(ins isa.Instruction) bool { return ins.Op == isa.OpMayGoto }) {
					t.Errorf("%s: may_goto not expanded after the fallback", name)
				}
			}
			for _, n := range []uint32{0, 1, 2, 5, 100} {
				data := loopsPacket(n)
				got := run(t, p, data, nil)
				want, ok := kernelRun(t, kern, name, data, nil)
				if !ok {
					want = rewritesWant(name, n, arr, hash)
					want.data = nil
				}
				if got.ret != want.ret || want.data != nil && !bytes.Equal(got.data, want.data) {
					t.Errorf("%s %s n=%d: got %d, want %d", name, cfg, n, got.ret, want.ret)
				}
			}
		}
	}
}

// rewritesWant is what the kernel returns for the programs of rewrites.c,
// for machines without bpf().
func rewritesWant(name string, n uint32, arr, hash map[uint32]uint64) runOut {
	tri := func(n uint64) uint64 { return n * (n + 1) / 2 }
	var v uint64
	switch name {
	case "lookup_then_loop":
		v = arr[0] + tri(uint64(n&1023))
	case "two_loops":
		v = 3 + 200 + 4
	case "loops_in_subprogs":
		m := uint64(n & 255)
		v = arr[1] + 5 + hash[1] + tri(m) + 100*m + (arr[2]+5)*3 + hash[2] + tri(m/2) + 100*(m/2)
	case "nested_loops":
		v = arr[1] + uint64(n&63)*13 + 8000
	case "all_together":
		m := uint64(n & 511)
		sub := 100*m + tri(m) - m + 3*m
		v = arr[3] + 1 + tri(m) + 2*(tri(m)-m) + 5*m + 7*sub + 100*m
	}
	return runOut{ret: uint32(v)}
}
