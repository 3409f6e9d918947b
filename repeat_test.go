package bpfvm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

// Repetitions of a test run see the packet as the one before left it, as
// in the kernel's BPF_PROG_TEST_RUN: a program that increments the first
// byte and moves the packet's head and tail compounds over the runs.
func TestRepeatKeepsPacket(t *testing.T) {
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"bump": {Name: "bump", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 1),
			asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R5, asm.R2, 0, asm.Byte),
			asm.Add.Imm(asm.R5, 1),
			asm.StoreMem(asm.R2, 0, asm.R5, asm.Byte),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, -2),
			asm.FnXdpAdjustHead.Call(),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, -1),
			asm.FnXdpAdjustTail.Call(),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
			asm.Return(),
		}},
	}}
	in := make([]byte, 64)
	for i := range in {
		in[i] = byte(i + 10)
	}
	const repeat = 5
	// Each run bumps the byte at the head, then exposes two zero bytes of
	// headroom in front of it and drops the last byte.
	want := in[:len(in)-repeat]
	want = append([]byte{in[0] + 1}, want[1:]...)
	for range repeat - 1 {
		want = append([]byte{1, 0}, want...)
	}
	want = append([]byte{0, 0}, want...)

	var kernOut []byte
	if kern := kernelSpec(t, spec); kern != nil {
		out := make([]byte, len(in)+4096)
		opts := &ebpf.RunOptions{Data: in, DataOut: out, Repeat: repeat}
		if ret, err := kern.Programs["bump"].Run(opts); err != nil || ret != 2 {
			t.Fatalf("kernel run: %d, %v", ret, err)
		}
		kernOut = opts.DataOut
		if !bytes.Equal(kernOut, want) {
			t.Errorf("kernel's output\n got % x\nwant % x", kernOut, want)
		}
	}
	for _, eng := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, noVerify := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/noverify=%v", eng, noVerify), func(t *testing.T) {
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: eng, NoVerify: noVerify}})
				if err != nil {
					t.Fatal(err)
				}
				defer coll.Close()
				p := coll.Programs["bump"]
				// Twice: a new test run starts from the input again.
				for range 2 {
					out := make([]byte, len(in)+512)
					res, err := p.Execute(&bpfvm.RunOptions{Data: in, DataOut: out, Repeat: repeat})
					if err != nil || res.R0 != 2 {
						t.Fatalf("run: %d, %v", res.R0, err)
					}
					if got := out[:res.DataSize]; !bytes.Equal(got, want) {
						t.Errorf("output\n got % x\nwant % x", got, want)
					}
				}
			})
		}
	}
}

// A test run's context stops it between repetitions, as a signal stops the
// kernel's.
func TestRepeatCancel(t *testing.T) {
	insns, err := isa.Assemble("r0 = 2\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, eng := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		p, err := bpfvm.NewRawProgram("pass", ebpf.XDP, insns, bpfvm.ProgramOptions{Engine: eng})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		start := time.Now()
		_, err = p.Run(&bpfvm.RunOptions{Data: make([]byte, 64), Repeat: 1<<32 - 1, RunContext: ctx})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want DeadlineExceeded", eng, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: stopped after %v", eng, d)
		}
	}
}

// Repetitions the JIT runs back to back in native code count as many runs
// as asked, across budget exits and mixed with repetitions that call a
// helper (which Go serves between them): a per-CPU counter (inlined
// lookup, no exit) and an array (bpf_map_update_elem) see every repetition.
func TestRepeatNativeCount(t *testing.T) {
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"pc": {Name: "pc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1},
			"h":  {Name: "h", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		},
		Programs: map[string]*ebpf.ProgramSpec{"count": {Name: "count", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("pc"),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			// Every 1000th repetition updates the array through the helper.
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.Mod.Imm(asm.R2, 1000),
			asm.JNE.Imm(asm.R2, 0, "out"),
			asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
			asm.LoadMapPtr(asm.R1, 0).WithReference("h"),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -16),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnMapUpdateElem.Call(),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
			asm.Return(),
		}}},
	}
	for _, eng := range []bpfvm.Engine{bpfvm.EngineJIT, bpfvm.EngineInterpreter} {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: 1, Programs: bpfvm.ProgramOptions{Engine: eng}})
		if err != nil {
			t.Fatal(err)
		}
		const n = 234567
		if r, err := coll.Programs["count"].Run(&bpfvm.RunOptions{Data: make([]byte, 64), Repeat: n}); err != nil || r != 2 {
			t.Fatalf("%s: %d, %v", eng, r, err)
		}
		var per []uint64
		var last uint64
		if err := coll.Maps["pc"].Lookup(uint32(0), &per); err != nil || per[0] != n {
			t.Errorf("%s: per-CPU count %v, %v; want %d", eng, per, err, n)
		}
		if err := coll.Maps["h"].Lookup(uint32(0), &last); err != nil || last != n/1000*1000 {
			t.Errorf("%s: last helper update at %d, %v; want %d", eng, last, err, n/1000*1000)
		}
		coll.Close()
	}
}
