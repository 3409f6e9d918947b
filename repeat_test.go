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
