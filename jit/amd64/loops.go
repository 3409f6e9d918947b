//go:build amd64 && linux

package amd64

import (
	"time"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
	"github.com/bpfvm/bpfvm/vm/tsc"
)

// Out-of-line stubs of the loop instructions (emitted by loopStub).
const (
	stubMayGoto = stubInvalid + 100 + iota // countdown ran out or was out
	stubIterEnd                            // bpf_iter_num_next at the end
)

// mayGotoTimed emits the rewrite's timed may_goto (isa.OpMayGotoTimed,
// semantics in vm/maygoto.go) on the frame's hidden countdown at
// [rbp+vm.MayGotoCount] as one read-modify-write and a branch:
//
//	sub qword [rbp-520], 1; jbe stub
//
// which falls through while the count stays above zero. The stub tells
// the two other cases apart by the flags of the subtraction: a borrow
// (the count was zero) restores the zero and takes the jump; a zero result
// (the count ran out) looks at the clock and refills or leaves it at zero,
// then falls through. A backward target (rare: clang jumps forward out of
// loops) gets a budget check in the stub, as jumps do.
func (c *compiler) mayGotoTimed(pc int, ins isa.Instruction) {
	a := c.a
	back, l := a.newLabel(), a.newLabel()
	c.stubs = append(c.stubs, stub{kind: stubMayGoto, l: l, back: back, desc: uint32(ins.Imm), word: int32(pc)})
	a.aluMI(8, aluSub, mem{rbp, vm.MayGotoCount}, 1)
	a.jcc(ccBE, l)
	a.bind(back)
}

// iterNumNext emits bpf_iter_num_next (isa.OpIterNumNext: R0 = next(R1)):
//
//	mov eax, [r1]; add eax, 1; cmp eax, [r1+4]; jge end; mov [r1], eax; mov r0, r1
//
// with the end (both fields zeroed, R0 = NULL) out of line, continuing
// after the instruction, or at done if not -1: the target of the
// `if r0 == 0 goto done` that follows (fuse), which the fast path, where R0
// is R1 and not NULL, never takes.
//
// Checked code first checks the iterator's 8 bytes as a write: verified
// programs run checked keep the rewrite's instruction (see isa.OpIterNumNext).
func (c *compiler) iterNumNext(pc int, done label) {
	c.checkAccess(pc, isa.R1, 0, 8, true, false)
	a := c.a
	r0, r1 := regMap[isa.R0], regMap[isa.R1]
	back := a.newLabel()
	if done < 0 {
		done = back
	}
	a.load(4, false, rax, mem{r1, 0})
	a.aluRI(4, aluAdd, rax, 1)
	a.aluRM(4, aluCmp, rax, mem{r1, 4})
	a.jcc(ccGE, c.loopStub(stubIterEnd, done, 0))
	a.store(4, mem{r1, 0}, rax)
	a.movRR(8, r0, r1)
	a.bind(back)
}

// loopStub queues an out-of-line stub continuing at back and returns its
// label.
func (c *compiler) loopStub(kind int, back label, desc uint32) label {
	l := c.a.newLabel()
	c.stubs = append(c.stubs, stub{kind: kind, l: l, back: back, desc: desc})
	return l
}

// emitLoopStub emits the stubs of loopStub (called from emitStub).
func (c *compiler) emitLoopStub(s stub) {
	a := c.a
	count, start := mem{rbp, vm.MayGotoCount}, mem{rbp, vm.MayGotoStart}
	switch s.kind {
	case stubMayGoto:
		// Flags of the countdown's subtraction: CF, it was zero; else ZF,
		// it is zero now.
		pc := int(s.word)
		t := pc + 1 + int(c.prog[pc].Off)
		out := a.newLabel()
		a.jcc(ccB, out)
		// rax = now (rdtsc: edx:eax; the interpreter reads the same
		// counter through package tsc, calibrated once per process); the
		// budget is s.desc µs.
		budget := tsc.Ticks(time.Duration(s.desc) * time.Microsecond)
		first, refill := a.newLabel(), a.newLabel()
		a.emit(0x0f, 0x31)
		a.shiftRI(8, shShl, rdx, 32)
		a.aluRR(8, aluOr, rax, rdx)
		a.load(8, false, rdx, start)
		a.testRR(8, rdx, rdx)
		a.jcc(ccE, first)
		a.aluRR(8, aluSub, rax, rdx) // ticks since the start
		a.movRI64(rdx, budget)
		a.aluRR(8, aluCmp, rax, rdx)
		a.jcc(ccAE, s.back) // spent: the countdown stays zero
		a.jmp(refill)
		a.bind(first)
		a.store(8, start, rax)
		a.bind(refill)
		a.storeImm(8, count, vm.MayGotoRefill)
		a.jmp(s.back)
		// The count was zero: undo the borrow and jump.
		a.bind(out)
		a.storeImm(8, count, 0)
		if t <= pc {
			c.budgetCheck(pc, pc+1-t)
		}
		a.jmp(c.pcL[t])
	case stubIterEnd:
		r1 := regMap[isa.R1]
		a.storeImm(8, mem{r1, 0}, 0)
		a.movRI32(regMap[isa.R0], 0)
		a.jmp(s.back)
	}
}
