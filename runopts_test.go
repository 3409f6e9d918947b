package bpfvm_test

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

// runClass names a test run's outcome, ours or the kernel's.
func runClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, bpfvm.ErrNotSupported):
		return "not supported"
	case errors.Is(err, syscall.EINVAL):
		return "EINVAL"
	case errors.Is(err, syscall.ENXIO):
		return "ENXIO"
	}
	return "other: " + err.Error()
}

// TestRunOptionsKernel compares the test-run fields (Flags, CPU,
// BatchSize) with the kernel's BPF_PROG_TEST_RUN for each program type:
// which combinations it refuses, and the CPU a run reports. bpfvm's
// unspecified type is compared with the kernel's raw tracepoints, whose
// rules it follows.
func TestRunOptionsKernel(t *testing.T) {
	insns, err := isa.Assemble("call 8\nexit") // bpf_get_smp_processor_id
	if err != nil {
		t.Fatal(err)
	}
	kernel := kernelAllowed(t)
	for _, typ := range []ebpf.ProgramType{ebpf.XDP, ebpf.SocketFilter, ebpf.SchedCLS, ebpf.SchedACT, ebpf.UnspecifiedProgram} {
		t.Run(typ.String(), func(t *testing.T) {
			ours, err := bpfvm.NewRawProgram("p", typ, insns, bpfvm.ProgramOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			var kern *ebpf.Program
			if kernel {
				ktyp := typ
				if typ == ebpf.UnspecifiedProgram {
					ktyp = ebpf.RawTracepoint
				}
				kern, err = ebpf.NewProgram(&ebpf.ProgramSpec{Type: ktyp, License: "GPL",
					Instructions: asm.Instructions{asm.FnGetSmpProcessorId.Call(), asm.Return()}})
				if err != nil {
					t.Fatal(err)
				}
				defer kern.Close()
			}
			for _, o := range []struct{ flags, cpu, batch uint32 }{
				{0, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1, 0}, {1, 1000, 0}, {4, 0, 0}, {8, 0, 0}, {0, 0, 1},
				{2, 0, 0}, {2, 0, 1},
			} {
				if o.cpu == 1 && runtime.GOMAXPROCS(0) < 2 {
					continue // our standalone program has GOMAXPROCS runners
				}
				opts := func() (ours *bpfvm.RunOptions, kern *ebpf.RunOptions) {
					ours = &bpfvm.RunOptions{Flags: o.flags, CPU: o.cpu, BatchSize: o.batch}
					kern = &ebpf.RunOptions{Flags: o.flags, CPU: o.cpu, BatchSize: o.batch}
					if typ != ebpf.UnspecifiedProgram {
						ours.Data, kern.Data = make([]byte, 64), make([]byte, 64)
					}
					return
				}
				oo, ko := opts()
				ret, err := ours.Run(oo)
				got := runClass(err)
				if err == nil && o.flags&1 != 0 && o.cpu < 2 {
					got += fmt.Sprint(" cpu ", ret) // a run on CPU 1 of our GOMAXPROCS runners
				}
				name := fmt.Sprintf("flags %d cpu %d batch %d", o.flags, o.cpu, o.batch)
				if kern == nil {
					t.Logf("%s: %s", name, got)
					continue
				}
				kret, kerr := kern.Run(ko)
				want := runClass(kerr)
				if kerr == nil && o.flags&1 != 0 && o.cpu < 2 {
					want += fmt.Sprint(" cpu ", kret)
				}
				if got == "not supported" && want == "ok" && o.flags&(2|4) != 0 {
					continue // live frames and checksums, which bpfvm does not model
				}
				if got != want {
					t.Errorf("%s: ours %s, kernel %s", name, got, want)
				}
			}
		})
	}
}

// TestRunOptionsCPU: a run on a CPU sees that CPU's number and per-CPU
// values, for XDP (where the kernel's CPU is any, and 0 is the default:
// the runners in turn) and for host types with RunOnCPU; an XDP CPU past
// the runners is ignored, as the kernel ignores XDP's.
func TestRunOptionsCPU(t *testing.T) {
	const ncpu = 4
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"pc": {Name: "pc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}},
		Programs: map[string]*ebpf.ProgramSpec{"count": {Name: "count", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("pc"),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.FnGetSmpProcessorId.Call().WithSymbol("out"),
			asm.Return(),
		}}},
	}
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: ncpu})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	prog := coll.Programs["count"]
	for cpu := uint32(1); cpu < ncpu; cpu++ {
		for range cpu + 1 {
			ret, err := prog.Run(&bpfvm.RunOptions{Data: make([]byte, 14), CPU: cpu})
			if err != nil || ret != cpu {
				t.Fatalf("CPU %d: ran on %d, %v", cpu, ret, err)
			}
		}
	}
	var per []uint64
	if err := coll.Maps["pc"].Lookup(uint32(0), &per); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(per) != "[0 2 3 4]" {
		t.Errorf("per-CPU counts %v, want [0 2 3 4]", per)
	}
	if ret, err := prog.Run(&bpfvm.RunOptions{Data: make([]byte, 14), CPU: ncpu + 3}); err != nil || ret >= ncpu {
		t.Errorf("CPU past the runners: ran on %d, %v", ret, err)
	}

	raw, err := isa.Assemble("call 8\nexit")
	if err != nil {
		t.Fatal(err)
	}
	p, err := bpfvm.NewRawProgram("p", ebpf.UnspecifiedProgram, raw, bpfvm.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ret, err := p.Run(&bpfvm.RunOptions{Flags: bpfvm.RunOnCPU, CPU: 1})
	if err != nil || ret != 1 {
		t.Errorf("raw program on CPU 1: ran on %d, %v", ret, err)
	}
}
