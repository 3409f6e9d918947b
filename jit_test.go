package bpfvm_test

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/jit/amd64"
)

func haveJIT(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("no JIT on this platform")
	}
}

// callHeavy calls helpers with native routines and mixes their results.
const callHeavySrc = `
	r6 = 0
	call bpf_get_smp_processor_id
	r6 += r0
	call bpf_get_prandom_u32
	r6 ^= r0
	call bpf_get_prandom_u32
	r6 += r0
	call bpf_get_numa_node_id
	r6 += r0
	r0 = r6
	exit`

// TestJITTiers loads programs into a pool with one near page for
// unprivileged loads and one far page: the first goes near, the second
// far, the third runs on the interpreter; all give the interpreter's
// results, and closing a program returns its page.
func TestJITTiers(t *testing.T) {
	haveJIT(t)
	insns, err := isa.Assemble(callHeavySrc)
	if err != nil {
		t.Fatal(err)
	}
	mem := amd64.NewMemory(amd64.MemoryConfig{NearLimit: 1 << 20, UnprivNearLimit: 4096, FarLimit: 4096})
	load := func(opts bpfvm.ProgramOptions) *bpfvm.Program {
		t.Helper()
		opts.JIT.Memory = mem
		p, err := bpfvm.NewRawProgram("calls", ebpf.XDP, insns, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	// NoInline: the rewrite would otherwise inline bpf_get_smp_processor_id.
	unpriv := bpfvm.ProgramOptions{Unprivileged: true, NoInline: true}
	want := []amd64.Tier{amd64.TierNear, amd64.TierFar, amd64.TierNone}
	var progs []*bpfvm.Program
	for i, tier := range want {
		p := load(unpriv)
		progs = append(progs, p)
		info := p.JITInfo()
		if info.Tier != tier || (p.Engine() == bpfvm.EngineJIT) != (tier != amd64.TierNone) {
			t.Fatalf("program %d: engine %v info %+v, want tier %v", i, p.Engine(), info, tier)
		}
		if tier != amd64.TierNone && (!info.Blinded || info.NativeCalls != 4 || info.Indirect != (tier == amd64.TierFar) || info.Pages != 1) {
			t.Errorf("program %d: %+v", i, info)
		}
	}
	for i, p := range progs {
		if _, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 64)}); err != nil {
			t.Fatalf("program %d: %v", i, err)
		}
	}
	progs[0].Close()
	if p := load(unpriv); p.JITInfo().Tier != amd64.TierNear {
		t.Errorf("after close: %+v", p.JITInfo())
	}
	// A privileged load still finds near memory (the higher limit).
	if p := load(bpfvm.ProgramOptions{NoInline: true}); p.JITInfo().Tier != amd64.TierNear || p.JITInfo().Blinded {
		t.Errorf("privileged: %+v", p.JITInfo())
	}
}
