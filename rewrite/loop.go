package rewrite

import (
	"errors"
	"fmt"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// InlineLoops replaces calls of bpf_loop whose callback and flags (0) the
// verifier proved on every path with the loop itself, as the kernel's
// inline_bpf_loop does: R6-R8 are saved in the frame's hidden slots
// (vm.LoopSave), the callback is called directly (a bpf-to-bpf call, with
// the helper's arguments and on the frame below, as the helper would run
// it), and R0 is the helper's result: the number of calls, or -E2BIG for
// more than 1<<23 loops. It returns the number of calls inlined.
//
// helpers says which helpers a call's id stands for (nil: the built-in
// ones), as InlineOptions.Helpers.
func InlineLoops(p *Program, helpers func(id int32) *helper.Helper) (int, error) {
	// Every loop in one PatchAll, each addressed by its original index;
	// the callbacks' calls are set afterwards from where the patch put
	// everything (At): earlier rewrites and the other loops move code,
	// and the verifier's callback index names the original program.
	type loop struct{ call, callback int }
	var rs []Replacement
	var loops []loop
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := p.Insns[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallHelper) || inlineKind(helpers, ins.Imm) != helper.InlineLoop {
			continue
		}
		aux := p.Aux[pc]
		if aux.LoopCallback == 0 || aux.LoopNoInline || p.Orig[pc] < 0 {
			continue
		}
		if _, ok := p.At(aux.LoopCallback - 1); !ok {
			return 0, fmt.Errorf("rewrite: insn %d: bpf_loop callback %d outside the program", pc, aux.LoopCallback-1)
		}
		rs = append(rs, Replacement{pc, loopSeq()})
		loops = append(loops, loop{p.Orig[pc], aux.LoopCallback - 1})
	}
	if len(rs) == 0 {
		return 0, nil
	}
	if err := p.PatchAll(rs); err != nil {
		if errors.Is(err, ErrJumpRange) {
			return 0, nil // the calls stay, as InlineHelpers does
		}
		return 0, err
	}
	for _, l := range loops {
		at, _ := p.At(l.call)
		callback, _ := p.At(l.callback)
		call := at + loopCallAt
		p.Insns[call].Imm = int32(callback - call - 1)
	}
	return len(loops), nil
}

// loopCallAt is the index in loopSeq of the callback's call.
const loopCallAt = 12

// loopSeq is bpf_loop(R1 = nr_loops, R2 = callback, R3 = ctx, R4 = 0)
// inline; the call's offset is set by InlineLoops.
func loopSeq() []isa.Instruction {
	const (
		ldx = isa.ClassLDX | isa.ModeMEM | isa.SizeDW
		stx = isa.ClassSTX | isa.ModeMEM | isa.SizeDW
	)
	r6, r7, r8 := int16(vm.LoopSave+16), int16(vm.LoopSave+8), int16(vm.LoopSave)
	return []isa.Instruction{
		{Op: isa.ClassJMP32 | isa.JumpLE | isa.SrcK, Dst: isa.R1, Imm: 1 << 23, Off: 2}, // if w1 <= BPF_MAX_LOOPS goto start
		{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R0, Imm: -7},              // r0 = -E2BIG
		{Op: isa.OpJA, Off: 16},                       // goto out
		{Op: stx, Dst: isa.R10, Src: isa.R6, Off: r6}, // start: save r6-r8
		{Op: stx, Dst: isa.R10, Src: isa.R7, Off: r7},
		{Op: stx, Dst: isa.R10, Src: isa.R8, Off: r8},
		{Op: isa.ClassALU | isa.ALUMov | isa.SrcX, Dst: isa.R6, Src: isa.R1},         // w6 = nr_loops
		{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R7},                    // r7 = 0: calls so far
		{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R8, Src: isa.R3},       // r8 = ctx
		{Op: isa.ClassJMP | isa.JumpGE | isa.SrcX, Dst: isa.R7, Src: isa.R6, Off: 5}, // loop: if r7 >= r6 goto done
		{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R1, Src: isa.R7},       // r1 = index
		{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R2, Src: isa.R8},       // r2 = ctx
		{Op: isa.OpCall, Src: isa.Register(isa.CallLocal)},                           // call callback
		{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcK, Dst: isa.R7, Imm: 1},            // r7 += 1
		{Op: isa.ClassJMP | isa.JumpEQ | isa.SrcK, Dst: isa.R0, Off: -6},             // if r0 == 0 goto loop
		{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R0, Src: isa.R7},       // done: r0 = calls
		{Op: ldx, Dst: isa.R6, Src: isa.R10, Off: r6},                                // restore r6-r8
		{Op: ldx, Dst: isa.R7, Src: isa.R10, Off: r7},
		{Op: ldx, Dst: isa.R8, Src: isa.R10, Off: r8},
	}
}
