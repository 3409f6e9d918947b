//go:build linux

package bpfvm_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	ebpfperf "github.com/cilium/ebpf/perf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/perf"
)

// outputSpec is a raw tracepoint calling bpf_perf_event_output(ctx,
// events, args[0], fp-8, 8) on the 8 bytes of args[1], returning its
// result.
func outputSpec() *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"events": {Name: "events", Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 4}},
		Programs: map[string]*ebpf.ProgramSpec{"output": {
			Name: "output", Type: ebpf.RawTracepoint, License: "GPL",
			Instructions: asm.Instructions{
				asm.LoadMem(asm.R3, asm.R1, 0, asm.DWord),
				asm.LoadMem(asm.R4, asm.R1, 8, asm.DWord),
				asm.StoreMem(asm.RFP, -8, asm.R4, asm.DWord),
				asm.LoadMapPtr(asm.R2, 0).WithReference("events"),
				asm.Mov.Reg(asm.R4, asm.RFP),
				asm.Add.Imm(asm.R4, -8),
				asm.Mov.Imm(asm.R5, 8),
				asm.FnPerfEventOutput.Call(),
				asm.Return(),
			},
		}},
	}
}

// TestTracingPerfOutput checks the tracing types' bpf_perf_event_output
// against the kernel's raw tracepoint test run: the data only, on the
// current CPU's ring or an index's, no packet bytes to append (EINVAL).
func TestTracingPerfOutput(t *testing.T) {
	const currentCPU = 0xffffffff
	vmc, err := bpfvm.NewCollection(outputSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer vmc.Close()
	rd, err := perf.NewReader(vmc.Maps["events"], 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var kern *ebpf.Collection
	if haveKernel(t) {
		pinCPU(t)
		if kern, err = ebpf.NewCollection(outputSpec()); err != nil {
			t.Logf("no kernel to compare with: %v", err)
		}
	}
	if kern != nil {
		defer kern.Close()
		kr, err := ebpfperf.NewReader(kern.Maps["events"], 4096)
		if err != nil {
			t.Fatal(err)
		}
		defer kr.Close()
	}
	for _, c := range []struct {
		name  string
		flags uint64
		want  int32
	}{
		{"current CPU", currentCPU, 0},
		{"CPU 0", 0, 0},
		{"packet bytes", currentCPU | 4<<32, -22},
		{"unknown flag", 1 << 60, -22},
		{"index out of range", 4096, -7},
	} {
		ctx := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, c.flags), 0x1122334455667788)
		got, err := vmc.Programs["output"].Run(&bpfvm.RunOptions{Context: ctx, CPU: 0, Flags: bpfvm.RunOnCPU})
		if err != nil {
			t.Fatal(err)
		}
		if int32(got) != c.want {
			t.Errorf("%s: %d, want %d", c.name, int32(got), c.want)
		}
		if c.want == 0 {
			rd.SetDeadline(time.Now().Add(time.Second))
			rec, err := rd.Read()
			if err != nil || len(rec.RawSample) < 8 || binary.LittleEndian.Uint64(rec.RawSample) != 0x1122334455667788 {
				t.Errorf("%s: sample % x (%v)", c.name, rec.RawSample, err)
			}
		}
		if kern != nil {
			k, err := kern.Programs["output"].Run(&ebpf.RunOptions{Context: ctx})
			if err != nil || int32(k) != int32(got) {
				t.Errorf("%s: kernel %d (%v), bpfvm %d", c.name, int32(k), err, int32(got))
			}
		}
	}
}
