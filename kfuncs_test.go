package bpfvm_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/vm"
)

// iterNumModel is bpf_iter_num_new followed by next until NULL, as the
// kernel defines them: new's result, the number of values and their sum.
func iterNumModel(start, end int32) (ret int64, n, sum uint64) {
	switch {
	case start > end:
		return -22, 0, 0
	case int64(end)-int64(start) > 1<<23:
		return -7, 0, 0
	}
	for v := int64(start); v < int64(end); v++ {
		n++
		sum += uint64(uint32(int32(v)))
	}
	return 0, n, sum
}

// The iterator gives the kernel's values at the edges of the int range, on
// both engines, with bpf_iter_num_next inlined and called.
func TestIterNum(t *testing.T) {
	cases := [][2]int32{
		{0, 0}, {0, 1}, {0, 5}, {5, 0}, {-3, 3}, {7, 7},
		{math.MinInt32, math.MinInt32 + 3}, {math.MaxInt32 - 2, math.MaxInt32},
		{0, 1<<23 + 1}, {math.MinInt32, math.MaxInt32}, {-1 << 10, 1 << 10},
	}
	for _, c := range cases {
		prog, err := isa.Assemble(fmt.Sprintf(`
			r6 = 0
			r7 = 0
			r1 = r10
			r1 += -8
			r2 = %d
			r3 = %d
			call kernel-function#%d
			r8 = r0
			r1 = r10
			r1 += -8
			call kernel-function#%d
			if r0 == 0 goto pc+4
			r1 = *(u32 *)(r0 +0)
			r7 += r1
			r6 += 1
			goto pc-8
			r1 = r10
			r1 += -8
			call kernel-function#%d
			r0 = r6
			r0 *= 31
			r0 += r7
			r0 *= 31
			r0 += r8
			exit
		`, c[0], c[1], isa.KfuncIterNumNew, isa.KfuncIterNumNext, isa.KfuncIterNumDestroy))
		if err != nil {
			t.Fatal(err)
		}
		ret, n, sum := iterNumModel(c[0], c[1])
		want := (n*31+sum)*31 + uint64(ret)
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			for _, opts := range []bpfvm.ProgramOptions{{}, {NoInline: true}, {NoVerify: true}} {
				opts.Engine = e
				p, err := bpfvm.NewRawProgram("iter", ebpf.XDP, prog, opts)
				if err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				res, err := p.Execute(&bpfvm.RunOptions{Data: make([]byte, 64)})
				p.Close()
				if err != nil {
					t.Fatal(err)
				}
				if res.R0 != want {
					t.Errorf("[%d, %d) on %v %+v: r0 = %d, want %d (ret %d, %d values, sum %d)", c[0], c[1], e, opts, res.R0, want, ret, n, sum)
				}
			}
		}
	}
}

// A kfunc bpfvm lacks is a load error naming it.
func TestUnknownKfunc(t *testing.T) {
	spec := &ebpf.ProgramSpec{Name: "k", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
		asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: -1}.WithReference("bpf_percpu_obj_new_impl"),
		asm.Return(),
	}}
	_, err := bpfvm.NewProgram(spec)
	if !errors.Is(err, loader.ErrUnknownKfunc) || err == nil || !strings.Contains(err.Error(), "bpf_percpu_obj_new_impl") {
		t.Errorf("load: %v, want an unknown kfunc error naming bpf_percpu_obj_new_impl", err)
	}
	// Kfunc ids bpfvm lacks and the internal helper ids kfuncs run under
	// are rejected in raw programs.
	for _, ins := range []isa.Instruction{
		{Op: isa.OpCall, Src: isa.Register(isa.CallKfunc), Imm: 999},
		{Op: isa.OpCall, Imm: isa.KfuncHelperBase + isa.KfuncIterNumNew},
	} {
		_, err := bpfvm.NewRawProgram("k", ebpf.XDP, []isa.Instruction{ins, {Op: isa.OpExit}}, bpfvm.ProgramOptions{})
		if !errors.Is(err, vm.ErrHelper) {
			t.Errorf("%+v: %v, want vm.ErrHelper", ins, err)
		}
	}
}

// Between rounds of an iterator loop the verifier widens only imprecise
// scalars, as the kernel does: an index that settles after one round stays
// known (here, a stack offset 0 then 1).
func TestIterKeepsPreciseScalars(t *testing.T) {
	prog, err := isa.Assemble(`
		r6 = 0
		r1 = r10
		r1 += -8
		r2 = 0
		r3 = 100
		call bpf_iter_num_new#1
		r1 = r10
		r1 += -8
		call bpf_iter_num_next#2
		if r0 == 0 goto pc+6
		r2 = r10
		r2 += -24
		r2 += r6
		*(u8 *)(r2 +0) = 1
		r6 = 1
		goto pc-10
		r1 = r10
		r1 += -8
		call bpf_iter_num_destroy#3
		r0 = 0
		exit
	`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := bpfvm.NewRawProgram("precise", ebpf.XDP, prog, bpfvm.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}
