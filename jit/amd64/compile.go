//go:build amd64 && linux

package amd64

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// Register mapping. BPF registers are pinned to x86-64 registers for the
// whole run; rax and rdx are scratch (division, address checks), r12 holds
// the execution context and r11 the instruction budget left in this chunk.
var regMap = [11]int{
	isa.R0:  rbx,
	isa.R1:  rdi,
	isa.R2:  rsi,
	isa.R3:  rcx,
	isa.R4:  r8,
	isa.R5:  r9,
	isa.R6:  r13,
	isa.R7:  r14,
	isa.R8:  r15,
	isa.R9:  r10,
	isa.R10: rbp,
}

const (
	regCtx  = r12
	regLeft = r11
)

// Exit codes: the low byte of the exit word native code leaves in the
// header when it returns to Go; the rest is the instruction index.
const (
	exitHelper     = iota // call a helper, then resume at the next instruction (site index, not pc)
	exitHelperSync        // exitHelper, then refresh what the code reads (checked, LD_ABS/LD_IND)
	exitDone              // the entry function returned; R0 is the result
	exitCallx             // callx: Go decides between a helper and a subprogram
	exitBudget            // budget chunk used up at a backward jump or a call
	exitDepth             // call depth exceeded
	exitMem               // checked access outside every region (exitAddr, exitDesc)
	exitCtx               // access to the emulated context (exitAddr, exitDesc)
	exitInvalid           // control reached the second slot of an LD_IMM64
	exitDead              // control reached isa.OpDead
	exitPacket            // LD_ABS/LD_IND at a negative offset: Go loads it (header offsets)
)

// Access descriptor bits (exitDesc and the check routine's edx).
const (
	descWrite = 1 << 2 // a store
	descNoCtx = 1 << 3 // an atomic: never emulated, always checked as a write
)

func exitWord(pc int, code int) int32 { return int32(pc<<8 | code) }

// maxPasses bounds the layout passes that shrink jumps; past it every jump
// takes its long form (which always converges).
const maxPasses = 12

// image is the machine code of a program for one memory mode.
type image struct {
	alloc   *execAlloc
	info    Info
	code    []byte   // the executable mapping
	base    uint64   // its address
	off     []uint32 // native offset of each instruction slot
	entry   uint32   // entry stub: calls header.target, then exits
	retStub uint32   // a bare ret: makes the current function return R0
	size    int      // bytes of machine code
	sites   []site   // helper calls, by the index in their exit word
	probes  bool     // the code has probe loads: the region table is kept, checked or not
	// chunk is the budget chunk runs of this image start with: the size
	// the last measured refill found to take about vm.SliceTime (0: none
	// measured yet; see refill).
	chunk atomic.Int64
}

// site is a helper call: what Go needs to serve its exit quickly.
type site struct {
	fn     vm.Helper
	resume uint64 // native address of the next instruction
	pc     int
}

func (img *image) addr(pc int) uint64 { return img.base + uint64(img.off[pc]) }

// stub is out-of-line code a site jumps to, emitted after the program.
type stub struct {
	kind int
	l    label // the stub's own label
	back label // where to continue (slow check: after the check; budget: resume point)
	word int32 // exit word
	desc uint32
}

const (
	stubExit    = iota // store the exit word (and resume at back, if set) and exit
	stubSlow           // call the region check routine, then continue at back
	stubAlign          // misaligned atomic: memory error
	stubInvalid        // second slot of LD_IMM64
	stubPacket         // LD_ABS/LD_IND offset out of range: negative offsets exit to Go
)

type compiler struct {
	prog    []isa.Instruction
	helpers []vm.Helper // by id
	checked bool
	exact   bool // exact instruction accounting (runs with a budget)
	leader  []bool
	count   []int32 // instructions in the block starting at a leader
	second  []bool  // second slots of LD_IMM64
	funcs   []int   // function entries, ascending

	saves     map[int][]int // calleeSaves by entry
	frameWork int           // flood-fill work so far (frames.go)
	stamp     []uint32      // region's visit marks, by pc
	gen       uint32        // region's current mark

	a     *asm
	pcL   []label
	stubs []stub
	sites []int // instruction index of each helper call site

	exitCommon, entry, retStub, check, memfail, abort label
	probe                                             label // the probe load routine (probeRoutine)
	exitKeepR0                                        label // exitCommon after R0's store: helper exits
	usesPacket                                        bool  // LD_ABS or LD_IND: Go keeps the packet bounds current
	probes                                            bool  // probe loads: Go keeps the region table current, checked or not

	// fp tracks, within a basic block, registers holding R10 plus a
	// constant (r2 = r10; r2 += -4): checked code needs no check for
	// their accesses inside the frame, as for R10's (trackFP).
	fp [isa.MaxRegister + 1]struct {
		known bool
		off   int64
	}

	opts        *Options
	native      []vm.Native // by pc: the routine serving a helper call, if any
	nativeCalls int
	base        uint64 // the image's address once allocated (0: unknown)
	allocSize   int    // bytes allocated at base
	thunk       label  // the retpoline thunk
}

var errTooLarge = errors.New("jit: program too large")

// compileImage compiles prog for one memory mode and places it in
// executable memory. Jump sizes converge over passes with the image at an
// unknown address, where every call of a native routine takes its
// indirect form (movabs + call); then the memory is allocated. In near
// memory, calls that reach their routine with rel32 shrink to direct
// calls, so more passes run at the final address until the layout is
// stable again (seed 003); it can only shrink, so it still fits. Should
// those passes not converge, the first layout is used: it is correct at
// any address.
func compileImage(prog []isa.Instruction, helpers []vm.Helper, checked, exact bool, opts *Options) (*image, error) {
	c := &compiler{prog: prog, helpers: helpers, checked: checked, exact: exact, opts: opts}
	c.analyze()
	a, err := c.converge(nil)
	if err != nil {
		return nil, err
	}
	x, err := opts.Memory.alloc(len(a.b), opts.Unprivileged, opts.Far)
	if err != nil {
		return nil, err
	}
	if x.tier == TierNear && c.nativeCalls > 0 {
		c.base, c.allocSize = x.base, x.size()
		if b, err := c.converge(a); err == nil && len(b.b) <= len(a.b) {
			a = b
		} else {
			c.base, c.allocSize = 0, 0
		}
	}
	if err := x.write(a.b); err != nil {
		x.free()
		return nil, err
	}
	img := c.finish(a, x)
	img.probes = c.probes
	img.info = Info{
		Tier: x.tier, CodeSize: len(a.b), Pages: x.pages, NativeCalls: c.nativeCalls,
		Indirect: c.nativeCalls > 0 && c.base == 0, Retpoline: c.nativeCalls > 0 && c.base == 0 && opts.Retpoline,
		Blinded: opts.Blind,
	}
	return img, nil
}

// converge runs layout passes until one reproduces the previous layout.
// Starting from a converged layout (after allocation) every pass must
// keep shrinking: jumps never take their long form again.
func (c *compiler) converge(from *asm) (*asm, error) {
	var prevPos, prevJmp []int32
	prevSize := -1
	if from != nil {
		prevPos, prevJmp, prevSize = from.pos, from.jumps, len(from.b)
	}
	for pass := 0; ; pass++ {
		if pass > maxPasses+3 || from != nil && pass > maxPasses {
			return nil, errors.New("jit: code layout did not converge")
		}
		a := &asm{prev: prevPos, prevJmp: prevJmp, allLong: from == nil && pass > maxPasses}
		if err := c.emitAll(a); err != nil {
			return nil, err
		}
		if len(a.b) > 1<<30 {
			return nil, errTooLarge
		}
		if len(a.b) == prevSize && samePositions(a.pos, prevPos) {
			return a, nil
		}
		prevPos, prevJmp, prevSize = a.pos, a.jumps, len(a.b)
	}
}

func samePositions(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (c *compiler) finish(a *asm, x *execAlloc) *image {
	img := &image{alloc: x, code: x.bytes(), size: len(a.b), base: x.base}
	img.off = make([]uint32, len(c.prog))
	for pc := range c.prog {
		img.off[pc] = uint32(a.pos[c.pcL[pc]])
	}
	img.entry = uint32(a.pos[c.entry])
	img.retStub = uint32(a.pos[c.retStub])
	img.sites = make([]site, len(c.sites))
	for i, pc := range c.sites {
		img.sites[i] = site{fn: c.helpers[c.prog[pc].Imm], resume: img.addr(pc + 1), pc: pc}
	}
	return img
}

// analyze finds the leaders: instructions where a block starts, so that
// the budget can be charged once per block. Blocks end at every jump, call
// and exit, so the count is exact wherever it is checked (backward jumps,
// calls) or read (tail calls).
func (c *compiler) analyze() {
	n := len(c.prog)
	c.leader = make([]bool, n)
	c.second = make([]bool, n)
	c.count = make([]int32, n)
	c.native = make([]vm.Native, n)
	c.leader[0] = true
	entry := make([]bool, n)
	entry[0] = true
	for pc := 0; pc < n; pc++ {
		ins := c.prog[pc]
		if ins.IsLdImm64() {
			c.second[pc+1] = true
			if ins.IsPseudoFunc() {
				c.mark(pc + 1 + int(ins.Imm))
				c.markEntry(entry, pc+1+int(ins.Imm))
			}
			pc++
			continue
		}
		if ins.IsProbe() {
			c.probes = true
		}
		if ins.Class() == isa.ClassLD {
			// LD_ABS, LD_IND: the only other LD. Out of bounds it returns
			// from the function, so it ends its block: the budget charged
			// stays exact.
			c.usesPacket = true
			c.mark(pc + 1)
		}
		if !isa.IsJump(ins.Class()) {
			continue
		}
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && c.opts.Natives != nil {
			if n := c.opts.Natives(ins.Imm); n > vm.NoNative && n < vm.NativeCount {
				c.native[pc] = n
				c.nativeCalls++
			}
		}
		c.mark(pc + 1)
		if t, ok := ins.JumpTarget(pc); ok {
			c.mark(t)
		}
		if ins.IsLocalCall() {
			c.mark(pc + 1 + int(ins.Imm))
			c.markEntry(entry, pc+1+int(ins.Imm))
		}
	}
	c.funcs = c.funcs[:0]
	for pc, e := range entry {
		if e {
			c.funcs = append(c.funcs, pc)
		}
	}
	start := 0
	var k int32
	for pc := 0; pc < n; pc++ {
		if c.second[pc] {
			continue
		}
		if c.leader[pc] && pc != start {
			c.count[start] = k
			start, k = pc, 0
		}
		k++
	}
	c.count[start] = k
}

func (c *compiler) markEntry(entry []bool, pc int) {
	if pc >= 0 && pc < len(entry) {
		entry[pc] = true
	}
}

// funcSize returns the number of instruction slots of the function that
// starts at entry: up to the next function's entry.
func (c *compiler) funcSize(entry int) int {
	i, _ := slices.BinarySearch(c.funcs, entry+1)
	if i < len(c.funcs) {
		return c.funcs[i] - entry
	}
	return len(c.prog) - entry
}

func (c *compiler) mark(pc int) {
	if pc >= 0 && pc < len(c.leader) && !c.second[pc] {
		c.leader[pc] = true
	}
}

func (c *compiler) emitAll(a *asm) error {
	c.a = a
	c.stubs = c.stubs[:0]
	c.sites = c.sites[:0]
	n := len(c.prog)
	c.pcL = make([]label, n)
	for i := range c.pcL {
		c.pcL[i] = a.newLabel()
	}
	c.exitCommon = a.newLabel()
	c.exitKeepR0 = a.newLabel()
	c.entry = a.newLabel()
	c.retStub = a.newLabel()
	c.check = a.newLabel()
	c.probe = a.newLabel()
	c.memfail = a.newLabel()
	c.abort = a.newLabel()
	c.thunk = a.newLabel()

	for pc := 0; pc < n; pc++ {
		if c.second[pc] {
			c.stubs = append(c.stubs, stub{kind: stubInvalid, l: c.pcL[pc], word: exitWord(pc, exitInvalid)})
			continue
		}
		a.bind(c.pcL[pc])
		if c.leader[pc] {
			c.fp = [isa.MaxRegister + 1]struct {
				known bool
				off   int64
			}{}
		}
		if c.exact && c.leader[pc] {
			a.aluRI(8, aluSub, regLeft, c.count[pc])
		}
		if k := c.fuse(pc); k > 0 {
			for j := 0; j < k; j++ {
				c.trackFP(c.prog[pc+j])
			}
			for j := 1; j < k; j++ {
				a.bind(c.pcL[pc+j])
			}
			pc += k - 1
			continue
		}
		if err := c.insn(pc); err != nil {
			return fmt.Errorf("insn %d: %w", pc, err)
		}
		c.trackFP(c.prog[pc])
	}
	c.common()
	// Stubs may queue more stubs.
	for i := 0; i < len(c.stubs); i++ {
		c.emitStub(c.stubs[i])
	}
	return nil
}

// repWeight is what a native repetition counts against the budget chunk
// (about the instructions of a short run; the chunk's size adapts to
// time).
const repWeight = 8

// common emits the shared routines.
func (c *compiler) common() {
	a := c.a
	// entry: call the function at header.target; its return is the run's.
	a.bind(c.entry)
	a.callM(mem{regCtx, offTarget})
	// Native repetitions (header.reps): run the entry again with fresh
	// registers and may_goto budget while Go allows it. The instruction
	// budget carries on, and each repetition is a budget site, so that
	// Go still sees the run every chunk (its context, the scheduler).
	again, done := a.newLabel(), a.newLabel()
	a.bind(again)
	a.aluMI(8, aluCmp, mem{regCtx, offReps}, 0)
	a.jcc(ccE, done)
	c.budgetCheck(0, repWeight)
	a.aluMI(8, aluSub, mem{regCtx, offReps}, 1)
	a.aluMI(8, aluAdd, mem{regCtx, offRepsDone}, 1)
	a.storeImm(8, mem{regCtx, offLoops}, maxLoops)
	for r := isa.R0; r <= isa.R9; r++ {
		if r != isa.R1 && r != isa.R2 {
			a.aluRR(4, aluXor, regMap[r], regMap[r])
		}
	}
	a.load(8, false, regMap[isa.R1], mem{regCtx, offRepR1})
	a.load(8, false, regMap[isa.R2], mem{regCtx, offRepR2})
	a.load(8, false, regMap[isa.R10], mem{regCtx, offRepFP})
	a.callM(mem{regCtx, offTarget})
	a.jmp(again)
	a.bind(done)
	a.storeImm(8, mem{regCtx, offExit}, exitDone)
	// fall through
	a.bind(c.exitCommon)
	a.store(8, mem{regCtx, offRegs}, regMap[0])
	// A helper's exit skips R0, which the helper's result replaces.
	a.bind(c.exitKeepR0)
	for i, r := range regMap[1:] {
		a.store(8, mem{regCtx, offRegs + int32(8*(i+1))}, r)
	}
	a.store(8, mem{regCtx, offRegs + 8*11}, regLeft)
	a.store(8, mem{regCtx, offNativeSP}, rsp)
	a.load(8, false, rsp, mem{regCtx, offGoSP})
	a.load(8, false, rbp, mem{regCtx, offGoBP})
	a.ret()

	a.bind(c.retStub)
	a.ret()

	// abort: LD_ABS/LD_IND out of bounds returns 0 from the current
	// function, as the kernel's expansion of them does; at depth 0 that
	// ends the run.
	a.bind(c.abort)
	a.aluRR(4, aluXor, regMap[0], regMap[0])
	a.ret()

	// memfail: rax = address, edx = descriptor.
	a.bind(c.memfail)
	a.store(8, mem{regCtx, offExitAddr}, rax)
	a.store(8, mem{regCtx, offExitDesc}, rdx)
	a.aluRI(8, aluAnd, rdx, -256)
	a.aluRI(8, aluOr, rdx, exitMem)
	a.store(8, mem{regCtx, offExit}, rdx)
	a.jmp(c.exitCommon)

	if c.checked {
		c.checkRoutine()
	}
	if c.probes {
		c.probeRoutine()
	}
	if c.opts.Retpoline && c.nativeCalls > 0 {
		c.retpoline()
	}
}

// callNative calls a native routine: a direct rel32 call when the image is
// in reach of it, else movabs + an indirect call, through the retpoline
// thunk if asked for.
func (c *compiler) callNative(target uint64) {
	a := c.a
	if c.base != 0 && reach(target, c.base, c.allocSize) {
		a.callAbs(c.base, target)
		return
	}
	a.movabs(rax, target)
	if c.opts.Retpoline {
		a.call(c.thunk)
		return
	}
	a.emit(0xff, 0xd0) // call rax
}

// retpoline emits the thunk for indirect calls (the call-site form of the
// "Intel Retpoline" sequence, with the target in rax): the CALL pushes a
// return address the CPU predicts into the capture loop, which the MOV
// replaces with the target before the RET, so the indirect branch is
// never predicted from the branch target buffer.
func (c *compiler) retpoline() {
	a := c.a
	set, capture := a.newLabel(), a.newLabel()
	a.bind(c.thunk)
	a.call(set)
	a.bind(capture)
	a.emit(0xf3, 0x90)       // pause
	a.emit(0x0f, 0xae, 0xe8) // lfence
	a.jmp(capture)
	a.bind(set)
	a.emit(0x48, 0x89, 0x04, 0x24) // mov [rsp], rax
	a.ret()
}

// checkRoutine validates an access that missed the inline stack check:
// rax = address, edx = descriptor (size index in bits 0-1, descWrite,
// descNoCtx, instruction index from bit 8). It returns if the access is
// allowed; otherwise it exits to Go, either to emulate a context access
// (then the run resumes after the instruction) or with a memory error.
func (c *compiler) checkRoutine() {
	a := c.a
	regions, loop, next, ok, fail := a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel()
	a.bind(c.check)
	c.routineEntry()
	// The emulated context comes first, as in vm.Env.Load.
	a.testRI(4, rdx, descNoCtx)
	a.jcc(ccNE, regions)
	a.aluMI(8, aluCmp, mem{regCtx, offCtxFlag}, 0)
	a.jcc(ccE, regions)
	c.within(mem{regCtx, offCtxStart}, mem{regCtx, offCtxLen}, regions)
	// Context access: exit to Go, which resumes after the instruction.
	c.routineExit()
	a.lea(rsp, mem{rsp, 8}) // drop the return address
	a.store(8, mem{regCtx, offExitAddr}, rax)
	a.store(8, mem{regCtx, offExitDesc}, rdx)
	a.aluRI(8, aluAnd, rdx, -256)
	a.aluRI(8, aluOr, rdx, exitCtx)
	a.store(8, mem{regCtx, offExit}, rdx)
	a.jmp(c.exitCommon)

	a.bind(regions)
	c.tableEntry(loop, next, fail)
	a.testRI(4, rdx, descWrite)
	a.jcc(ccE, ok)
	a.aluMI(8, aluCmp, mem{rdi, 16}, 0)
	a.jcc(ccE, next)
	a.bind(ok)
	c.makeHot()
	c.routineExit()
	a.ret()
	a.bind(next)
	a.aluRI(8, aluAdd, rdi, entrySize)
	a.jmp(loop)
	a.bind(fail)
	c.routineExit()
	a.jmp(c.memfail)
}

// probeLoad emits a probe load (isa.ModeProbe): the probe routine says
// whether the run may read the bytes (ZF set), and the load happens only
// then; otherwise the destination is 0. In checked and unchecked code
// alike: a probe load never faults and never fails the run.
func (c *compiler) probeLoad(ins isa.Instruction, size int) {
	a := c.a
	zero, done := a.newLabel(), a.newLabel()
	m := mem{regMap[ins.Src], int32(ins.Off)}
	a.lea(rax, m)
	a.movRI32(rdx, sizeIndex(size))
	a.call(c.probe)
	a.jcc(ccNE, zero)
	a.load(size, ins.Op&0xe0 == isa.ModeProbeSX, regMap[ins.Dst], mem{rax, 0})
	a.jmp(done)
	a.bind(zero)
	a.aluRR(4, aluXor, regMap[ins.Dst], regMap[ins.Dst])
	a.bind(done)
}

// probeRoutine tells whether a probe load may read, and where: rax =
// address, edx = size index. It sets ZF if the bytes lie in the whole
// stack (dead frames too: a probe load only reads) or in a region of the
// table, leaving rax, or in the world's kernel memory (the kernel table),
// turning rax into the host address of the bytes, as vm.Env.Probe; it
// clears ZF otherwise. It preserves every register but rax and rdx.
func (c *compiler) probeRoutine() {
	a := c.a
	regions, loop, next, ok, fail := a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel()
	kloop, knext, kfail := a.newLabel(), a.newLabel(), a.newLabel()
	a.bind(c.probe)
	c.routineEntry()
	// An address with the top bit set is no memory of this process's
	// (a kernel-half address): only the kernel table can hold it.
	a.testRR(8, rax, rax)
	a.jcc(ccS, fail)
	c.within(mem{regCtx, offProbeStack}, mem{regCtx, offProbeStackLen}, regions)
	a.jmp(ok)
	a.bind(regions)
	c.tableEntry(loop, next, fail)
	a.bind(ok)
	a.aluRR(8, aluCmp, rsi, rsi) // ZF set
	c.routineExit()
	a.ret()
	a.bind(next)
	a.aluRI(8, aluAdd, rdi, entrySize)
	a.jmp(loop)
	a.bind(fail)
	// The kernel table: start, length, host address.
	a.load(8, false, rdi, mem{regCtx, offKernPtr})
	a.bind(kloop)
	a.aluRM(8, aluCmp, rdi, mem{regCtx, offKernEnd})
	a.jcc(ccAE, kfail)
	c.within(mem{rdi, 0}, mem{rdi, 8}, knext)
	a.aluRM(8, aluSub, rax, mem{rdi, 0})
	a.aluRM(8, aluAdd, rax, mem{rdi, 16})
	a.jmp(ok)
	a.bind(knext)
	a.aluRI(8, aluAdd, rdi, entrySize)
	a.jmp(kloop)
	a.bind(kfail)
	a.testRR(8, rsi, rsi) // ZF clear: rsi >= 1
	c.routineExit()
	a.ret()
}

// routineEntry starts the check and probe routines: it saves the
// registers they use and sets rsi to the access size (edx's size index).
func (c *compiler) routineEntry() {
	a := c.a
	a.push(rcx)
	a.push(rsi)
	a.push(rdi)
	a.movRR(8, rcx, rdx)
	a.aluRI(4, aluAnd, rcx, 3)
	a.movRI32(rsi, 1)
	a.shiftRCL(4, shShl, rsi)
}

// tableEntry starts the check and probe routines' walk of the region
// table: rdi goes from entry to entry (loop, where next comes back to),
// to fail past the last, to next when the access misses the entry.
func (c *compiler) tableEntry(loop, next, fail label) {
	a := c.a
	a.load(8, false, rdi, mem{regCtx, offTablePtr})
	a.bind(loop)
	a.aluRM(8, aluCmp, rdi, mem{regCtx, offTableEnd})
	a.jcc(ccAE, fail)
	c.within(mem{rdi, 0}, mem{rdi, 8}, next)
}

// routineExit restores what routineEntry saved.
func (c *compiler) routineExit() {
	c.a.pop(rdi)
	c.a.pop(rsi)
	c.a.pop(rcx)
}

// within jumps to miss unless the rsi bytes at rax lie in [start,
// start+len) (start and len in memory): iff addr-start <= len and
// len-(addr-start) >= size, unsigned. It clobbers rcx.
func (c *compiler) within(start, length mem, miss label) {
	a := c.a
	a.movRR(8, rcx, rax)
	a.aluRM(8, aluSub, rcx, start)
	a.aluRM(8, aluCmp, rcx, length)
	a.jcc(ccA, miss)
	a.unary(8, 3, rcx) // neg
	a.aluRM(8, aluAdd, rcx, length)
	a.aluRR(8, aluCmp, rcx, rsi)
	a.jcc(ccB, miss)
}

// makeHot records the table entry at rdi as the hot region that inline
// checks try after the stack, unless it overlaps the emulated context
// (whose accesses must reach Go). rax, rdx, rcx and rsi are free.
func (c *compiler) makeHot() {
	a := c.a
	done, set := a.newLabel(), a.newLabel()
	a.aluMI(8, aluCmp, mem{regCtx, offCtxFlag}, 0)
	a.jcc(ccE, set)
	// [s, s+len) and [cs, cs+clen) overlap iff s-cs < clen or cs-s < len.
	a.load(8, false, rax, mem{rdi, 0})
	a.aluRM(8, aluSub, rax, mem{regCtx, offCtxStart})
	a.aluRM(8, aluCmp, rax, mem{regCtx, offCtxLen})
	a.jcc(ccB, done)
	a.unary(8, 3, rax) // cs - s
	a.aluRM(8, aluCmp, rax, mem{rdi, 8})
	a.jcc(ccB, done)
	a.bind(set)
	a.load(8, false, rax, mem{rdi, 0})
	a.store(8, mem{regCtx, offHotStart}, rax)
	for i := range 4 {
		size := int32(1) << i
		// lim = len >= size ? len - size + 1 : 0; wlim = writable ? lim : 0
		a.load(8, false, rax, mem{rdi, 8})
		a.aluRI(8, aluSub, rax, size-1)
		a.aluRR(4, aluXor, rdx, rdx)
		a.aluRM(8, aluCmp, rax, mem{rdi, 8})
		// If len < size-1 the subtraction wrapped (rax > len); len = size-1
		// gives 0. Either way no access of this size fits.
		a.rr(8, []byte{0x0f, 0x47}, rax, rdx) // cmova rax, rdx
		a.store(8, mem{regCtx, offHotLim + 8*int32(i)}, rax)
		a.aluMI(8, aluCmp, mem{rdi, 16}, 0)
		a.rr(8, []byte{0x0f, 0x44}, rax, rdx) // cmove rax, rdx
		a.store(8, mem{regCtx, offHotWLim + 8*int32(i)}, rax)
	}
	a.bind(done)
}

func (c *compiler) emitStub(s stub) {
	a := c.a
	a.bind(s.l)
	switch s.kind {
	case stubExit, stubInvalid:
		a.storeImm(8, mem{regCtx, offExit}, s.word)
		if s.back >= 0 && s.kind == stubExit {
			a.leaRIP(rax, s.back)
			a.store(8, mem{regCtx, offResume}, rax)
		}
		a.jmp(c.exitCommon)
	case stubSlow:
		a.movRI32(rdx, s.desc)
		a.call(c.check)
		a.jmp(s.back)
	case stubAlign:
		a.movRI32(rdx, s.desc)
		a.jmp(c.memfail)
	case stubPacket:
		// rax = the offset. Past the end: return 0 (abort); negative:
		// it may name a header (vm.LoadPacket), which Go reads.
		a.testRR(8, rax, rax)
		a.jcc(ccS^1, c.abort)
		a.jmp(c.exitStub(s.word, s.back))
	case stubMayGoto, stubIterEnd:
		c.emitLoopStub(s) // loops.go
	}
}

// exitStub returns the label of a stub that exits with word and, when back
// is not -1, resumes at back.
func (c *compiler) exitStub(word int32, back label) label {
	l := c.a.newLabel()
	c.stubs = append(c.stubs, stub{kind: stubExit, l: l, back: back, word: word})
	return l
}

// budgetCheck emits the check of a budget site (a backward jump or a
// call): if the chunk is used up, exit to Go, which fails the run or
// refills the chunk and resumes right after the check. With exact accounting the blocks have charged
// their instructions; otherwise (runs without a budget, where the chunk
// only makes native code return to Go regularly) the site charges weight,
// a bound on the instructions run since the previous site: the span of a
// backward jump, the size of a called function. One fused sub+js in place
// of an add per block and a test.
func (c *compiler) budgetCheck(pc int, weight int) {
	a := c.a
	back := a.newLabel()
	if c.exact {
		a.testRR(8, regLeft, regLeft)
	} else {
		a.aluRI(8, aluSub, regLeft, int32(min(max(weight, 1), yieldChunk)))
	}
	a.jcc(ccS, c.exitStub(exitWord(pc, exitBudget), back))
	a.bind(back)
}

func sizeIndex(size int) uint32 {
	switch size {
	case 1:
		return 0
	case 2:
		return 1
	case 4:
		return 2
	}
	return 3
}

// trackFP updates c.fp after ins: a copy of R10 or of a tracked register
// is tracked, a constant added to or subtracted from one moves it, and
// anything else that may write a register forgets what it writes.
func (c *compiler) trackFP(ins isa.Instruction) {
	fp := &c.fp
	switch {
	case ins.Op == isa.ClassALU64|isa.ALUMov|isa.SrcX && ins.Off == 0 && ins.Dst < isa.R10:
		if ins.Src == isa.R10 {
			fp[ins.Dst].known, fp[ins.Dst].off = true, 0
		} else {
			fp[ins.Dst] = fp[ins.Src]
		}
		return
	case (ins.Op == isa.ClassALU64|isa.ALUAdd|isa.SrcK || ins.Op == isa.ClassALU64|isa.ALUSub|isa.SrcK) && ins.Dst < isa.R10:
		d := int64(ins.Imm)
		if ins.Op&0xf0 == isa.ALUSub {
			d = -d
		}
		if f := &fp[ins.Dst]; f.known {
			f.off += d
			if f.off < -1<<20 || f.off > 1<<20 {
				f.known = false
			}
		}
		return
	}
	switch ins.Class() {
	case isa.ClassST:
		return // writes memory only
	case isa.ClassSTX:
		if ins.Op&0xe0 == isa.ModeMEM {
			return
		}
	case isa.ClassALU, isa.ClassALU64, isa.ClassLDX:
		if ins.Dst < isa.R10 {
			fp[ins.Dst].known = false
			return
		}
	case isa.ClassLD:
		if ins.IsLdImm64() && ins.Dst < isa.R10 {
			fp[ins.Dst].known = false
			return
		}
	}
	// Atomics, LD_ABS/LD_IND, jumps and calls: forget all.
	for i := range fp {
		fp[i].known = false
	}
}

// checkAccess emits the checked-mode validation of an access of size bytes
// at base+off; atomics are also checked for natural alignment.
func (c *compiler) checkAccess(pc int, base isa.Register, off int16, size int, write, atomic bool) {
	if !c.checked {
		return
	}
	a := c.a
	m := mem{regMap[base], int32(off)}
	desc := uint32(pc)<<8 | sizeIndex(size)
	if write || atomic {
		desc |= descWrite
	}
	if atomic {
		desc |= descNoCtx
	}
	a.lea(rax, m)
	if atomic && size > 1 {
		l := a.newLabel()
		c.stubs = append(c.stubs, stub{kind: stubAlign, l: l, desc: desc})
		a.emit(0xa8, byte(size-1)) // test al, size-1
		a.jcc(ccNE, l)
	}
	// R10-relative accesses inside the current frame need no check: R10
	// always points at the end of a frame inside the live stack.
	if base == isa.R10 && off >= -vm.StackSize && int(off)+size <= 0 {
		return
	}
	// So do accesses through a register holding R10 plus a constant.
	if f := c.fp[base]; f.known && f.off+int64(off) >= -vm.StackSize && f.off+int64(off)+int64(size) <= 0 {
		return
	}
	back := a.newLabel()
	slow := a.newLabel()
	c.stubs = append(c.stubs, stub{kind: stubSlow, l: slow, back: back, desc: desc})
	i := 8 * int32(sizeIndex(size))
	// The stack, and the region the check routine matched last (the hot
	// region), in the order the access is likely to hit.
	lim := offHotLim
	if desc&descWrite != 0 {
		lim = offHotWLim
	}
	first, firstLim, second, secondLim := int32(offStackStart), offStackLim+i, int32(offHotStart), lim+i
	if pc < len(c.opts.NonStack) && c.opts.NonStack[pc] {
		first, firstLim, second, secondLim = second, secondLim, first, firstLim
	}
	a.movRR(8, rdx, rax)
	a.aluRM(8, aluSub, rdx, mem{regCtx, first})
	a.aluRM(8, aluCmp, rdx, mem{regCtx, firstLim})
	a.jcc(ccB, back)
	a.movRR(8, rdx, rax)
	a.aluRM(8, aluSub, rdx, mem{regCtx, second})
	a.aluRM(8, aluCmp, rdx, mem{regCtx, secondLim})
	a.jcc(ccAE, slow)
	a.bind(back)
}

// jmpCC maps a conditional jump operation (>> 4) to its condition code;
// -1 marks the others.
var jmpCC = [16]int{
	isa.JumpA >> 4: -1, isa.JumpEQ >> 4: ccE, isa.JumpGT >> 4: ccA, isa.JumpGE >> 4: ccAE,
	isa.JumpSet >> 4: ccNE, isa.JumpNE >> 4: ccNE, isa.JumpSGT >> 4: ccG, isa.JumpSGE >> 4: ccGE,
	isa.JumpCall >> 4: -1, isa.JumpExit >> 4: -1, isa.JumpLT >> 4: ccB, isa.JumpLE >> 4: ccBE,
	isa.JumpSLT >> 4: ccL, isa.JumpSLE >> 4: ccLE, isa.JumpCond >> 4: -1, 15: -1,
}

// aluGroup1 and aluShift map ALU operations (>> 4) to x86 operations.
var (
	aluGroup1 = [16]int{isa.ALUAdd >> 4: aluAdd, isa.ALUSub >> 4: aluSub, isa.ALUOr >> 4: aluOr, isa.ALUAnd >> 4: aluAnd, isa.ALUXor >> 4: aluXor}
	aluShift  = [16]int{isa.ALULsh >> 4: shShl, isa.ALURsh >> 4: shShr, isa.ALUArsh >> 4: shSar}
)

var errUnsupported = errors.New("unsupported instruction")

// insn emits one instruction.
func (c *compiler) insn(pc int) error {
	ins := c.prog[pc]
	if ins.Op == isa.OpIterNumNext {
		c.iterNumNext(pc, -1) // loops.go
		return nil
	}
	switch ins.Class() {
	case isa.ClassALU, isa.ClassALU64:
		if ins.Op == isa.OpCPUIndex {
			return c.cpuIndex(ins)
		}
		if ins.Op == isa.OpDead {
			c.a.jmp(c.exitStub(exitWord(pc, exitDead), -1))
			return nil
		}
		if ins.Op == isa.OpMaskedALU {
			c.maskedALU(ins) // spectre.go
			return nil
		}
		if ins.IsAddrSpaceCast() {
			c.addrSpaceCast(ins) // arena.go
			return nil
		}
		return c.alu(ins)
	case isa.ClassJMP, isa.ClassJMP32:
		return c.jump(pc, ins)
	case isa.ClassLD:
		return c.ld(pc, ins)
	case isa.ClassLDX, isa.ClassST, isa.ClassSTX:
		if ins.IsArena() {
			c.arenaAccess(ins) // arena.go
			return nil
		}
	}
	switch ins.Class() {
	case isa.ClassLDX:
		size := isa.SizeBytes(ins.Op)
		if ins.IsProbe() {
			c.probeLoad(ins, size)
			return nil
		}
		signed := ins.Op&0xe0 == isa.ModeMEMSX
		trusted := ins.IsTrusted()
		if ins.Op&0xe0 != isa.ModeMEM && !signed && !trusted || signed && size == 8 {
			return errUnsupported
		}
		if !trusted {
			c.checkAccess(pc, ins.Src, ins.Off, size, false, false)
		}
		c.a.load(size, signed, regMap[ins.Dst], mem{regMap[ins.Src], int32(ins.Off)})
	case isa.ClassST:
		if ins.Op == isa.OpNospec {
			c.a.lfence() // spectre.go
			return nil
		}
		trusted := ins.IsTrusted()
		if ins.Op&0xe0 != isa.ModeMEM && !trusted {
			return errUnsupported
		}
		size := isa.SizeBytes(ins.Op)
		if !trusted {
			c.checkAccess(pc, ins.Dst, ins.Off, size, true, false)
		}
		if c.opts.Blind {
			c.blindImm(rax, ins.Imm)
			c.a.store(size, mem{regMap[ins.Dst], int32(ins.Off)}, rax)
			break
		}
		c.a.storeImm(size, mem{regMap[ins.Dst], int32(ins.Off)}, ins.Imm)
	case isa.ClassSTX:
		size := isa.SizeBytes(ins.Op)
		switch ins.Op & 0xe0 {
		case isa.ModeMEM:
			c.checkAccess(pc, ins.Dst, ins.Off, size, true, false)
			c.a.store(size, mem{regMap[ins.Dst], int32(ins.Off)}, regMap[ins.Src])
		case isa.ModeATOMIC:
			return c.atomic(pc, ins, size)
		default:
			return errUnsupported
		}
	default:
		return errUnsupported
	}
	return nil
}

func (c *compiler) alu(ins isa.Instruction) error {
	a := c.a
	size := 8
	if ins.Class() == isa.ClassALU {
		size = 4
	}
	x := ins.Op&isa.SrcX != 0
	dst, src := regMap[ins.Dst], regMap[ins.Src]
	op := ins.Op & 0xf0
	blind := c.opts.Blind && !x
	switch op {
	case isa.ALUAdd, isa.ALUSub, isa.ALUOr, isa.ALUAnd, isa.ALUXor:
		o := aluGroup1[op>>4]
		if blind {
			c.blindImm(rax, ins.Imm)
			a.aluRR(size, o, dst, rax)
		} else if x {
			a.aluRR(size, o, dst, src)
		} else {
			a.aluRI(size, o, dst, ins.Imm)
		}
	case isa.ALUMov:
		switch {
		case x && ins.Off != 0:
			from := int(ins.Off) / 8
			if from != 1 && from != 2 && (from != 4 || size != 8) {
				return errUnsupported
			}
			a.movsxRR(size, from, dst, src)
		case x:
			if size == 4 || dst != src {
				a.movRR(size, dst, src)
			}
		case blind && size == 8:
			c.blindImm(dst, ins.Imm)
		case blind:
			c.blindImm32(dst, uint32(ins.Imm))
		case size == 8:
			a.movRI64(dst, uint64(int64(ins.Imm)))
		default:
			a.movRI32(dst, uint32(ins.Imm))
		}
	case isa.ALUMul:
		if blind {
			c.blindImm(rax, ins.Imm)
			a.imulRR(size, dst, rax)
		} else if x {
			a.imulRR(size, dst, src)
		} else {
			a.imulRRI(size, dst, dst, ins.Imm)
		}
	case isa.ALUNeg:
		a.unary(size, 3, dst)
	case isa.ALULsh, isa.ALURsh, isa.ALUArsh:
		o := aluShift[op>>4]
		if !x {
			n := uint8(uint32(ins.Imm) & uint32(size*8-1))
			if n == 0 {
				if size == 4 {
					a.movRR(4, dst, dst)
				}
				return nil
			}
			a.shiftRI(size, o, dst, n)
			return nil
		}
		c.shiftX(size, o, dst, src)
	case isa.ALUDiv, isa.ALUMod:
		c.div(size, op == isa.ALUMod, ins.Off == 1, x, dst, src, ins.Imm)
	case isa.ALUEnd:
		swap := x || ins.Class() == isa.ClassALU64
		switch {
		case !swap && ins.Imm == 16:
			a.movzxRR(2, dst, dst)
		case !swap && ins.Imm == 32:
			a.movRR(4, dst, dst)
		case !swap && ins.Imm == 64:
		case ins.Imm == 16:
			a.rol16by8(dst)
			a.movzxRR(2, dst, dst)
		case ins.Imm == 32:
			a.bswap(4, dst)
		case ins.Imm == 64:
			a.bswap(8, dst)
		default:
			return errUnsupported
		}
	default:
		return errUnsupported
	}
	return nil
}

// shiftX shifts dst by the count in src; x86 takes the count in cl, and cl
// belongs to R3, so R3 is parked in rdx meanwhile.
func (c *compiler) shiftX(size, op int, dst, src int) {
	a := c.a
	if src == rcx {
		if dst == rcx {
			a.movRR(8, rax, rcx)
			a.shiftRCL(size, op, rax)
			a.movRR(8, rcx, rax)
			return
		}
		a.shiftRCL(size, op, dst)
		return
	}
	a.movRR(8, rdx, rcx)
	a.movRR(4, rcx, src)
	d := dst
	if dst == rcx {
		d = rdx
	}
	a.shiftRCL(size, op, d)
	a.movRR(8, rcx, rdx)
}

// div emits unsigned and signed division and modulo with the RFC 9669
// rules: x/0 = 0, x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0 (x86 would
// trap on the last two). 32-bit results are zero-extended.
func (c *compiler) div(size int, mod, signed, x bool, dst, src int, imm int32) {
	a := c.a
	zero := func() {
		if !mod {
			a.aluRR(4, aluXor, dst, dst)
		} else if size == 4 {
			a.movRR(4, dst, dst)
		}
	}
	minusOne := func() {
		if !mod {
			a.unary(size, 3, dst) // neg: INT_MIN stays INT_MIN
		} else {
			a.aluRR(4, aluXor, dst, dst)
		}
	}
	divide := func(byImm bool) {
		a.movRR(size, rax, dst)
		if signed {
			if size == 8 {
				a.cqo()
			} else {
				a.cdq()
			}
		} else {
			a.aluRR(4, aluXor, rdx, rdx)
		}
		digit := 6
		if signed {
			digit = 7
		}
		if byImm {
			a.unaryM(size, digit, mem{rsp, 0})
		} else {
			a.unary(size, digit, src)
		}
		if mod {
			a.movRR(size, dst, rdx)
		} else {
			a.movRR(size, dst, rax)
		}
	}
	if !x {
		if size == 4 && uint32(imm) == 0 || imm == 0 {
			zero()
			return
		}
		if signed && imm == -1 {
			minusOne()
			return
		}
		if c.opts.Blind {
			c.blindImm(rax, imm)
			a.push(rax)
		} else {
			a.pushImm(imm)
		}
		divide(true)
		a.lea(rsp, mem{rsp, 8})
		return
	}
	done, isZero := a.newLabel(), a.newLabel()
	a.testRR(size, src, src)
	a.jcc(ccE, isZero)
	if signed {
		normal := a.newLabel()
		a.aluRI(size, aluCmp, src, -1)
		a.jcc(ccNE, normal)
		minusOne()
		a.jmp(done)
		a.bind(normal)
	}
	divide(false)
	a.jmp(done)
	a.bind(isZero)
	zero()
	a.bind(done)
}

func (c *compiler) jump(pc int, ins isa.Instruction) error {
	a := c.a
	op := ins.Op & 0xf0
	size := 8
	if ins.Class() == isa.ClassJMP32 {
		size = 4
	}
	switch {
	case op == isa.JumpA:
		t, _ := ins.JumpTarget(pc)
		if t <= pc {
			c.budgetCheck(pc, pc+1-t)
		}
		if t != pc+1 {
			a.jmp(c.pcL[t])
		}
		return nil
	case ins.Op == isa.OpExit:
		a.ret()
		return nil
	case ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && c.native[pc] != vm.NoNative:
		c.callNative(nativeRoutines.addr[c.native[pc]])
		return nil
	case ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper):
		// Go runs the helper and resumes at the next instruction.
		code := exitHelper
		if c.checked || c.usesPacket || c.probes {
			code = exitHelperSync
		}
		a.storeImm(8, mem{regCtx, offExit}, exitWord(len(c.sites), code))
		c.sites = append(c.sites, pc)
		a.jmp(c.exitKeepR0)
		return nil
	case ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallLocal):
		a.aluRM(8, aluCmp, rbp, mem{regCtx, offMinFP})
		a.jcc(ccBE, c.exitStub(exitWord(pc, exitDepth), -1))
		t := pc + 1 + int(ins.Imm)
		c.budgetCheck(pc, c.funcSize(t))
		c.callFrame(c.calleeSaves(t), func() { a.call(c.pcL[t]) })
		return nil
	case ins.Op == isa.OpCallX:
		// Go checks the target; a subprogram is called at resume.
		resume := a.newLabel()
		a.store(8, mem{regCtx, offExitAddr}, regMap[ins.Dst])
		a.storeImm(8, mem{regCtx, offExit}, exitWord(pc, exitCallx))
		a.leaRIP(rax, resume)
		a.store(8, mem{regCtx, offResume}, rax)
		a.jmp(c.exitCommon)
		a.bind(resume)
		c.callFrame([]int{regMap[6], regMap[7], regMap[8], regMap[9]}, func() { a.callM(mem{regCtx, offTarget}) })
		return nil
	case ins.Op == isa.OpMayGotoTimed:
		c.mayGotoTimed(pc, ins) // loops.go
		return nil
	case ins.Op == isa.OpMayGoto:
		t := pc + 1 + int(ins.Off)
		dec := a.newLabel()
		a.aluMI(8, aluCmp, mem{regCtx, offLoops}, 0)
		a.jcc(ccNE, dec)
		if t <= pc {
			c.budgetCheck(pc, pc+1-t)
		}
		a.jmp(c.pcL[t])
		a.bind(dec)
		a.aluMI(8, aluSub, mem{regCtx, offLoops}, 1)
		return nil
	}
	cc := jmpCC[op>>4]
	if cc < 0 {
		return errUnsupported
	}
	dst := regMap[ins.Dst]
	x := ins.Op&isa.SrcX != 0
	t := pc + 1 + int(ins.Off)
	if t <= pc && !c.exact {
		// Without exact accounting a backward jump may charge whether or
		// not it is taken: the check goes before the compare, and the
		// jump is a single conditional branch.
		c.budgetCheck(pc, pc+1-t)
	}
	switch {
	case op == isa.JumpSet && x:
		a.testRR(size, dst, regMap[ins.Src])
	case c.opts.Blind && !x && op == isa.JumpSet:
		c.blindImm(rax, ins.Imm)
		a.testRR(size, dst, rax)
	case c.opts.Blind && !x:
		c.blindImm(rax, ins.Imm)
		a.aluRR(size, aluCmp, dst, rax)
	case op == isa.JumpSet:
		a.testRI(size, dst, ins.Imm)
	case x:
		a.aluRR(size, aluCmp, dst, regMap[ins.Src])
	case ins.Imm == 0:
		a.testRR(size, dst, dst) // the flags of cmp dst, 0
	default:
		a.aluRI(size, aluCmp, dst, ins.Imm)
	}
	if t > pc || !c.exact {
		a.jcc(cc, c.pcL[t])
		return nil
	}
	// Backward: check the budget chunk on the taken path.
	skip := a.newLabel()
	a.jcc(cc^1, skip)
	c.budgetCheck(pc, pc+1-t)
	a.jmp(c.pcL[t])
	a.bind(skip)
	return nil
}

// callFrame saves the callee-saved registers the callee may write
// (calleeSaves) around a bpf-to-bpf call and gives the callee the next
// frame. R10 is read-only, so the callee returns with the frame pointer it
// got, which the caller moves back.
func (c *compiler) callFrame(saved []int, call func()) {
	a := c.a
	for _, r := range saved {
		a.push(r)
	}
	a.aluRI(8, aluSub, rbp, vm.StackSize)
	c.moveLiveStack(vm.StackSize)
	call()
	c.moveLiveStack(-vm.StackSize)
	a.aluRI(8, aluAdd, rbp, vm.StackSize)
	for i := len(saved) - 1; i >= 0; i-- {
		a.pop(saved[i])
	}
}

// moveLiveStack extends (by > 0) or shrinks the inline check's stack span
// downwards by by bytes: checked code gives a callee its frame and takes
// it back at the return, so that no function reaches the frames below
// its own (vm.Env.LiveStack). Unchecked code has no checks to update.
func (c *compiler) moveLiveStack(by int32) {
	if !c.checked {
		return
	}
	a := c.a
	a.aluMI(8, aluSub, mem{regCtx, offStackStart}, by)
	for i := range int32(4) {
		a.aluMI(8, aluAdd, mem{regCtx, offStackLim + 8*i}, by)
	}
}

func (c *compiler) ld(pc int, ins isa.Instruction) error {
	a := c.a
	switch ins.Op & 0xe0 {
	case isa.ModeIMM:
		if ins.Op != isa.OpLdImm64 {
			return errUnsupported
		}
		v := isa.Imm64(ins, c.prog[pc+1])
		if ins.IsPseudoFunc() {
			v = interp.FuncValue(pc + 1 + int(ins.Imm))
		}
		if c.opts.Blind {
			c.blindImm64(regMap[ins.Dst], v)
			return nil
		}
		a.movRI64(regMap[ins.Dst], v)
		return nil
	case isa.ModeABS, isa.ModeIND:
		c.usesPacket = true
	default:
		return errUnsupported
	}
	size := isa.SizeBytes(ins.Op)
	if size == 8 {
		return errUnsupported
	}
	switch {
	case ins.Op&0xe0 == isa.ModeABS && c.opts.Blind:
		c.blindImm(rax, ins.Imm)
	case ins.Op&0xe0 == isa.ModeABS:
		a.movRI64(rax, uint64(int64(ins.Imm)))
	case c.opts.Blind:
		c.blindImm(rdx, ins.Imm)
		a.movRR(4, rax, regMap[ins.Src])
		a.aluRR(4, aluAdd, rax, rdx)
		a.movsxRR(8, 4, rax, rax)
	default:
		a.movRR(4, rax, regMap[ins.Src])
		a.aluRI(4, aluAdd, rax, ins.Imm)
		a.movsxRR(8, 4, rax, rax)
	}
	back, far := a.newLabel(), a.newLabel()
	c.stubs = append(c.stubs, stub{kind: stubPacket, l: far, back: back, word: exitWord(pc, exitPacket)})
	a.aluRM(8, aluCmp, rax, mem{regCtx, offPktLen})
	a.jcc(ccAE, far) // also every negative offset, unsigned
	a.lea(rdx, mem{rax, int32(size)})
	a.aluRM(8, aluCmp, rdx, mem{regCtx, offPktLen})
	a.jcc(ccA, c.abort)
	a.aluRM(8, aluAdd, rax, mem{regCtx, offPktStart})
	r0 := regMap[0]
	a.load(size, false, r0, mem{rax, 0})
	switch size {
	case 2:
		a.rol16by8(r0)
	case 4:
		a.bswap(4, r0)
	}
	a.bind(back)
	return nil
}

func (c *compiler) atomic(pc int, ins isa.Instruction, size int) error {
	a := c.a
	switch ins.Imm {
	case isa.AtomicLoadAcquire:
		c.checkAccess(pc, ins.Src, ins.Off, size, true, true)
		a.load(size, false, regMap[ins.Dst], mem{regMap[ins.Src], int32(ins.Off)})
		return nil
	case isa.AtomicStoreRelease:
		c.checkAccess(pc, ins.Dst, ins.Off, size, true, true)
		a.store(size, mem{regMap[ins.Dst], int32(ins.Off)}, regMap[ins.Src])
		return nil
	}
	if size != 4 && size != 8 {
		return errUnsupported
	}
	if !atomicRMW(ins.Imm) {
		return errUnsupported
	}
	c.checkAccess(pc, ins.Dst, ins.Off, size, true, true)
	c.atomicOp(ins, size, mem{regMap[ins.Dst], int32(ins.Off)})
	return nil
}

// atomicRMW reports whether imm is a read-modify-write atomic operation
// the JIT compiles (not a load-acquire or store-release).
func atomicRMW(imm int32) bool {
	switch imm {
	case isa.AtomicAdd, isa.AtomicOr, isa.AtomicAnd, isa.AtomicXor,
		isa.AtomicAdd | isa.AtomicFetch, isa.AtomicOr | isa.AtomicFetch,
		isa.AtomicAnd | isa.AtomicFetch, isa.AtomicXor | isa.AtomicFetch,
		isa.AtomicXchg, isa.AtomicCmpXchg:
		return true
	}
	return false
}

// atomicOp emits the read-modify-write of an atomic instruction on m
// (whose base is neither rax nor rdx, which it clobbers).
func (c *compiler) atomicOp(ins isa.Instruction, size int, m mem) {
	a := c.a
	src := regMap[ins.Src]
	op := func(imm int32) int {
		switch imm &^ isa.AtomicFetch {
		case isa.AtomicOr:
			return aluOr
		case isa.AtomicAnd:
			return aluAnd
		case isa.AtomicXor:
			return aluXor
		}
		return aluAdd
	}
	switch ins.Imm {
	case isa.AtomicAdd, isa.AtomicOr, isa.AtomicAnd, isa.AtomicXor:
		a.lockALU(size, op(ins.Imm), m, src)
	case isa.AtomicAdd | isa.AtomicFetch:
		a.lockXadd(size, m, src)
	case isa.AtomicOr | isa.AtomicFetch, isa.AtomicAnd | isa.AtomicFetch, isa.AtomicXor | isa.AtomicFetch:
		loop := a.newLabel()
		a.load(size, false, rax, m)
		a.bind(loop)
		a.movRR(size, rdx, rax)
		a.aluRR(size, op(ins.Imm), rdx, src)
		a.lockCmpxchg(size, m, rdx)
		a.jcc(ccNE, loop)
		a.movRR(size, src, rax)
	case isa.AtomicXchg:
		a.xchg(size, m, src)
	case isa.AtomicCmpXchg:
		r0 := regMap[0]
		a.movRR(8, rax, r0)
		a.lockCmpxchg(size, m, src)
		a.movRR(size, r0, rax)
	}
}
