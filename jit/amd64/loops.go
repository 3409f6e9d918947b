//go:build amd64 && linux

package amd64

import (
	"time"

	"bpfvm/isa"
	"bpfvm/vm"
	"bpfvm/vm/tsc"
)

// stubMayGoto is the out-of-line refill of a timed may_goto's countdown.
const stubMayGoto = stubInvalid + 100

// mayGotoTimed emits the rewrite's timed may_goto (isa.OpMayGotoTimed,
// semantics in vm/maygoto.go) with the frame's hidden countdown at
// [rbp+vm.MayGotoCount]. The common case is six instructions and no taken
// branch:
//
//	mov rax, [rbp-520]; test rax, rax; jz target; sub rax, 1; jz refill
//	mov [rbp-520], rax
//
// The refill (a stub after the code, see mayGotoRefill) runs once every
// vm.MayGotoRefill rounds.
func (c *compiler) mayGotoTimed(pc int, ins isa.Instruction) {
	a := c.a
	t := pc + 1 + int(ins.Off)
	a.load(8, false, rax, mem{rbp, vm.MayGotoCount})
	a.testRR(8, rax, rax)
	if t > pc {
		a.jcc(ccE, c.pcL[t])
	} else {
		dec := a.newLabel()
		a.jcc(ccNE, dec)
		c.budgetCheck(pc, exitYield)
		a.jmp(c.pcL[t])
		a.bind(dec)
	}
	a.aluRI(8, aluSub, rax, 1)
	refill, store := a.newLabel(), a.newLabel()
	c.stubs = append(c.stubs, stub{kind: stubMayGoto, l: refill, back: store, desc: uint32(ins.Imm)})
	a.jcc(ccE, refill)
	a.bind(store)
	a.store(8, mem{rbp, vm.MayGotoCount}, rax)
}

// mayGotoRefill emits the refill stub: the time-stamp counter (rdtsc; the
// interpreter reads the same counter through package tsc, calibrated once
// per process) is compared with the frame's start time; the countdown is
// refilled within the budget (s.desc microseconds) and left at zero after
// it. The first refill of a frame takes the start time.
func (c *compiler) mayGotoRefill(s stub) {
	a := c.a
	budget := tsc.Ticks(time.Duration(s.desc) * time.Microsecond)
	start := mem{rbp, vm.MayGotoStart}
	first := a.newLabel()
	a.emit(0x0f, 0x31) // rdtsc: edx:eax
	a.shiftRI(8, shShl, rdx, 32)
	a.aluRR(8, aluOr, rax, rdx)
	a.load(8, false, rdx, start)
	a.testRR(8, rdx, rdx)
	a.jcc(ccE, first)
	a.aluRR(8, aluSub, rax, rdx) // ticks since the start
	a.movRI64(rdx, budget)
	a.aluRR(8, aluCmp, rax, rdx)
	a.movRI32(rax, 0) // mov keeps the flags
	a.jcc(ccAE, s.back)
	a.movRI32(rax, vm.MayGotoRefill)
	a.jmp(s.back)
	a.bind(first)
	a.store(8, start, rax)
	a.movRI32(rax, vm.MayGotoRefill)
	a.jmp(s.back)
}
