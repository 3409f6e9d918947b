//go:build amd64 && linux

package amd64

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// Program is a program compiled to x86-64 machine code. It is safe for
// concurrent use; each run takes an execution context (native stack and
// header): the one kept in vm.Env.Cache, or one from a pool.
type Program struct {
	insns   []isa.Instruction
	helpers []vm.Helper // by helper id
	resolve interp.HelperFunc
	opts    Options

	// Images by mode: [checked][exact]. Exact instruction accounting is
	// for runs with a budget; runs without one use code that only counts
	// backward jumps and calls (see budgetCheck).
	modes [2][2]struct {
		ready atomic.Pointer[image] // img, once compiled
		once  sync.Once
		img   *image
		err   error
	}

	id     uint64 // what runs mark their execution context with
	closed atomic.Bool
	code   *codeSet
}

var lastID atomic.Uint64

// codeSet holds a program's machine code mappings, so that they can be
// unmapped by Close or, failing that, once the program is unreachable. It
// must not refer to anything that can reach the Program (such as helpers),
// or the cleanup would keep the program alive forever.
type codeSet struct {
	mu     sync.Mutex
	allocs []*execAlloc
	freed  bool
}

func (s *codeSet) add(x *execAlloc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed {
		x.free()
		return false
	}
	s.allocs = append(s.allocs, x)
	return true
}

func (s *codeSet) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed {
		return
	}
	s.freed = true
	for _, x := range s.allocs {
		x.free()
	}
	s.allocs = nil
}

// Compile translates prog to machine code. LD_IMM64 constants must already
// be resolved, as for interp.New; every helper the program calls must be
// known to helpers.
func Compile(prog []isa.Instruction, helpers interp.HelperFunc, opts Options) (*Program, error) {
	if err := isa.ValidateXlated(prog); err != nil {
		return nil, err
	}
	if opts.Memory == nil {
		opts.Memory = DefaultMemory()
	}
	p := &Program{insns: append([]isa.Instruction(nil), prog...), resolve: helpers, opts: opts, id: lastID.Add(1), code: &codeSet{}}
	runtime.AddCleanup(p, (*codeSet).free, p.code)
	table, err := interp.Helpers(prog, helpers)
	if err != nil {
		return nil, err
	}
	p.helpers = table
	modes := opts.Modes
	if modes == 0 {
		modes = Checked
	}
	for _, m := range []Mode{Checked, Unchecked} {
		if modes&m != 0 {
			if _, err := p.image(m == Checked, opts.Budgeted); err != nil {
				p.Close()
				return nil, err
			}
		}
	}
	return p, nil
}

func (p *Program) image(checked, exact bool) (*image, error) {
	m := &p.modes[b2i(checked)][b2i(exact)]
	if img := m.ready.Load(); img != nil {
		return img, nil
	}
	m.once.Do(func() {
		m.img, m.err = compileImage(p.insns, p.helpers, checked, exact, &p.opts)
		if m.err == nil && !p.code.add(m.img.alloc) {
			m.img, m.err = nil, ErrClosed
		}
		if m.img != nil {
			m.ready.Store(m.img)
		}
	})
	return m.img, m.err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compiled returns the image of a memory mode, preferring the accounting
// Options.Budgeted chose (nil if that mode was not compiled).
func (p *Program) compiled(checked bool) *image {
	m := &p.modes[b2i(checked)]
	if img := m[b2i(p.opts.Budgeted)].ready.Load(); img != nil {
		return img
	}
	return m[b2i(!p.opts.Budgeted)].ready.Load()
}

// Len returns the number of instruction slots.
func (p *Program) Len() int { return len(p.insns) }

// CodeSize returns the bytes of machine code generated for a mode (0 if
// that mode was not compiled).
func (p *Program) CodeSize(checked bool) int {
	if img := p.compiled(checked); img != nil {
		return img.size
	}
	return 0
}

// Info describes the machine code compiled for a mode (Tier is TierNone if
// that mode was not compiled).
func (p *Program) Info(checked bool) Info {
	if img := p.compiled(checked); img != nil {
		return img.info
	}
	return Info{}
}

// Close releases the machine code: at once if no run is in progress, else
// when the last one ends. Later runs fail with ErrClosed.
func (p *Program) Close() error {
	if !p.closed.Swap(true) {
		p.tryFree()
	}
	return nil
}

// tryFree unmaps the code of a closed program unless a run is in progress.
// Runs mark their execution context with the program's id using plain
// stores, then check closed; Close sets closed, then makes every thread
// execute a memory barrier before it looks at the marks, so that either
// it sees the run's mark or the run sees closed (and does not start, or
// frees the code when it ends). Without membarrier(2), the code is freed
// when the program becomes unreachable.
func (p *Program) tryFree() {
	if !processBarrier() || running(p.id) {
		return
	}
	p.code.free()
}

const maxLoops = 1 << 23 // may_goto budget per run, as BPF_MAX_LOOPS

// Budget accounting: the instruction count lives in r11 as the part of the
// remaining budget handed to native code (a chunk of at most yieldChunk
// instructions, so that native code returns to Go regularly and lets the
// runtime stop the world); the rest stays in the run's reserve. Chunks are
// sized by time: each refill that knows when the chunk started sizes the
// next to take about vm.SliceTime (vm.NextSlice), and the image keeps that
// size for its next runs. A chunk of cheap ALU code stays near yieldChunk;
// one of helper calls, cache misses or inlined callbacks is smaller, so
// that every chunk ends in time for the run's deadline. A run that can be
// cancelled (not a callback's) reads the clock when it starts, so that its
// first chunk is measured too; until the image has a measured size,
// cancellable runs start with the small firstChunk and others with
// yieldChunk, so that short runs never stop for a refill.
const (
	yieldChunk  = 1 << 20
	firstChunk  = 1 << 12
	minChunk    = 1 << 8
	budgetLimit = 1 << 62
)

// Run runs the program with R1 and R2 set as given, as interp.Program.Run.
func (p *Program) Run(env *vm.Env, r1, r2, budget uint64) (uint64, error) {
	return p.run(env, 0, [5]uint64{r1, r2}, budget, 1, nil, false)
}

// Call runs the subprogram named by fn (an interp.FuncValue) with arguments
// r1-r5 on the stack below the frame that called the running helper
// (env.FP), as interp.Program.Call; it is what callback helpers use.
func (p *Program) Call(env *vm.Env, fn uint64, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	tag := interp.FuncValue(0)
	if fn&^0xffff_ffff != tag || fn&0xffff_ffff >= uint64(len(p.insns)) {
		return 0, fmt.Errorf("%w: callback %#x is not a function", vm.ErrMemory, fn)
	}
	saved, fp := env.Stack, env.FP
	if env.FP < env.Stack.Start+vm.StackSize {
		return 0, vm.ErrCallDepth
	}
	env.Stack.End = env.FP - vm.StackSize
	v, err := p.run(env, int(fn&0xffff_ffff), [5]uint64{r1, r2, r3, r4, r5}, 0, 1, nil, true)
	env.Stack, env.FP = saved, fp
	return v, err
}

// Repeat runs the program n times (at least once) as n calls of Run with
// the same arguments would, and returns the last run's R0; between, when
// set, is called between two runs and must not change the stack, regions,
// context or packet of env. It stops at the first error, of a run or of
// between. The runs
// share the setup of one: the execution context, the image, the header.
func (p *Program) Repeat(env *vm.Env, r1, r2, budget uint64, n uint32, between func() error) (uint64, error) {
	return p.run(env, 0, [5]uint64{r1, r2}, budget, n, between, false)
}

func (p *Program) run(env *vm.Env, entry int, args [5]uint64, budget uint64, n uint32, between func() error, nested bool) (uint64, error) {
	maxDepth := min((env.Stack.End-env.Stack.Start)/vm.StackSize, vm.MaxFrames)
	if env.Stack.End < env.Stack.Start || maxDepth < 1 {
		return 0, &vm.RunError{PC: entry, Err: vm.ErrCallDepth}
	}
	// The execution context: the one cached in env.Cache unless a run
	// uses it (this run is nested in that one), else one from the pool.
	var c *execCtx
	cache := env.Cache
	if cache != nil {
		c, _ = cache.JIT.(*execCtx)
	}
	if c == nil || c.h.running != 0 {
		if c, _ = ctxPool.Get().(*execCtx); c == nil {
			return 0, fmt.Errorf("jit: cannot allocate an execution context")
		}
	}
	c.h.running = p.id
	defer p.leave(c, cache)
	if p.closed.Load() {
		return 0, ErrClosed
	}
	checked := env.Checked
	img, err := p.image(checked, budget != 0)
	if err != nil {
		return 0, err
	}
	if budget == 0 {
		budget = ^uint64(0)
	}
	// Field by field: composite literals here are built on the stack and
	// copied with wide loads that stall on store forwarding.
	var r run
	r.p, r.env, r.c, r.img, r.table = p, env, c, img, checked || img.probes
	r.budget = budget

	h := c.h
	h.minFP = env.Stack.End - (maxDepth-1)*vm.StackSize
	h.cpu = uint64(env.CPU)
	if env.Rand != nil {
		h.rand = uint64(uintptr(unsafe.Pointer(env.Rand)))
	} else {
		h.rand = c.base + uint64(offOwnRand)
	}
	target, resume := img.addr(entry), img.base+uint64(img.entry)
	// Synced once: a run leaves the header in step with env (every exit
	// that may change env syncs it), and between changes nothing the
	// header mirrors.
	h.regs[10] = env.Stack.End // the frame sync gives the inline stack check
	if !c.sync(env, r.table) {
		return 0, errTable
	}
	// A run that can be cancelled reads the clock when it starts, so that
	// its first chunk is measured: the first of a Run or Repeat, not a
	// callback's (the helper running callbacks paces them, and they are
	// many and short).
	cancellable := env.Context != nil && env.Context.Done() != nil
	timed := cancellable && !nested
	for {
		total := int64(min(budget, budgetLimit))
		r.chunk, r.last = img.chunk.Load(), 0
		if timed {
			timed, r.last = false, vm.Now()
		}
		if r.chunk == 0 {
			// No size measured yet: small while a deadline may be near.
			r.chunk = yieldChunk
			if cancellable {
				r.chunk = firstChunk
			}
		}
		chunk := min(total, r.chunk)
		r.reserve, r.handed = total-chunk, chunk
		h.regs[0], h.regs[1], h.regs[2], h.regs[3], h.regs[4], h.regs[5] = 0, args[0], args[1], args[2], args[3], args[4]
		h.regs[6], h.regs[7], h.regs[8], h.regs[9], h.regs[10] = 0, 0, 0, 0, env.Stack.End
		h.regs[11] = uint64(chunk)
		h.loops = maxLoops
		h.nativeSP = c.stackTop()
		h.target, h.resume = target, resume
		v, err := r.loop()
		if n <= 1 || err != nil {
			return v, err
		}
		n--
		if between != nil {
			if err := between(); err != nil {
				return 0, err
			}
		}
	}
}

func (p *Program) leave(c *execCtx, cache *vm.Cache) {
	c.h.running = 0
	switch {
	case cache == nil:
		ctxPool.Put(c)
	case cache.JIT == nil:
		cache.JIT = c // kept for the next run
	case cache.JIT != any(c):
		ctxPool.Put(c) // a nested run's
	}
	if p.closed.Load() {
		p.tryFree()
	}
}

// run is the Go side of one run: it enters native code and serves its exits.
type run struct {
	p   *Program
	env *vm.Env
	c   *execCtx
	img *image
	// table says the code reads the region table (checked code, probe
	// loads): Go keeps it current.
	table   bool
	budget  uint64 // as given (0 replaced by the maximum)
	reserve int64  // budget not yet handed to native code
	handed  int64  // the chunk last handed to native code
	chunk   int64  // the size of the next chunk
	last    int64  // vm.Now when the current chunk started (0: unknown)
}

func (r *run) loop() (uint64, error) {
	h := r.c.h
	base := uintptr(r.c.base)
	env := r.env
	// Native code names helper sites by their index in img.sites.
	sites := unsafe.Pointer(unsafe.SliceData(r.img.sites))
	enter(base)
	for {
		word := h.exit
		if word&0xff == exitHelper {
			// The fast path: a helper call after which nothing needs a
			// refresh.
			s := (*site)(unsafe.Add(sites, uintptr(word>>8)*unsafe.Sizeof(site{})))
			if fp := h.regs[10]; env.FP != fp {
				env.FP = fp // a load and compare measured 0.25 ns faster than a store
			}
			h.resume = s.resume
			v, err := s.fn(env, h.regs[1], h.regs[2], h.regs[3], h.regs[4], h.regs[5])
			h.regs[0] = v
			if err != nil {
				if err := r.helperError(s, err); err != nil {
					return 0, err
				}
			}
			enter(base)
			continue
		}
		pc := int(word >> 8)
		if word&0xff == exitHelperSync {
			// A helper call after which checked code needs the region
			// table refreshed and LD_ABS/LD_IND the packet bounds.
			s := &r.img.sites[pc]
			env.FP = h.regs[10]
			h.resume = s.resume
			v, err := s.fn(env, h.regs[1], h.regs[2], h.regs[3], h.regs[4], h.regs[5])
			h.regs[0] = v
			if err := r.afterHelper(s, err); err != nil {
				return 0, err
			}
			enter(base)
			continue
		}
		switch word & 0xff {
		case exitDone:
			return h.regs[0], nil
		case exitCallx:
			if err := r.callx(pc); err != nil {
				return 0, err
			}
		case exitBudget:
			// Every backward jump and call is a budget site, as in the
			// interpreter.
			if err := r.refill(pc); err != nil {
				return 0, err
			}
		case exitDepth:
			return 0, &vm.RunError{PC: pc, Err: vm.ErrCallDepth}
		case exitMem:
			d := h.exitDesc
			return 0, &vm.RunError{PC: pc, Err: &vm.MemoryError{Addr: h.exitAddr, Size: 1 << (d & 3), Write: d&descWrite != 0}}
		case exitCtx:
			if err := r.ctxAccess(pc); err != nil {
				return 0, err
			}
		case exitDead:
			return 0, &vm.RunError{PC: pc, Err: vm.ErrDeadCode}
		case exitPacket:
			r.packetHeader(pc)
		case exitInvalid:
			return 0, &vm.RunError{PC: pc, Err: fmt.Errorf("%w: second slot of ld_imm64 executed", isa.ErrInvalidProgram)}
		default:
			return 0, fmt.Errorf("jit: bad exit word %#x", word)
		}
		enter(base)
	}
}

// afterHelper is the slow part of serving a helper: its error, or the
// refresh of what native code checks after a helper may have changed it:
// the region table (checked code, probe loads), LD_ABS/LD_IND the packet
// bounds.
func (r *run) afterHelper(s *site, err error) error {
	if err != nil {
		return r.helperError(s, err)
	}
	if r.table {
		if !r.c.sync(r.env, true) {
			return &vm.RunError{PC: s.pc, Err: errTable}
		}
		return nil
	}
	r.c.h.syncPacket(r.env)
	return nil
}

var errTable = errors.New("jit: cannot allocate a region table")

// executed returns the number of instructions run so far.
func (r *run) executed() uint64 {
	total := r.reserve + int64(r.c.h.regs[11])
	return uint64(min(r.budget, budgetLimit)) - uint64(total)
}

// helperError handles a helper's error: a *vm.TailCall runs the target in
// place of the current function; anything else ends the run.
func (r *run) helperError(s *site, err error) error {
	tc, ok := err.(*vm.TailCall)
	if !ok {
		return &vm.RunError{PC: s.pc, Err: err}
	}
	h := r.c.h
	env := r.env
	// The target replaces the current function: it runs on this frame's
	// stack space and its result is this function's return value.
	// What is left of the budget, as in the interpreter. A run without a
	// budget passes none on: its code does not count instructions.
	left := uint64(0)
	if r.budget != ^uint64(0) {
		n := r.executed()
		left = max(r.budget-min(n, r.budget), 1)
	}
	saved := env.Stack
	env.Stack.End = h.regs[10]
	v, err := tc.Target.Run(env, h.regs[1], 0, left)
	env.Stack = saved
	if err != nil {
		return err
	}
	h.regs[0] = v
	h.resume = r.img.base + uint64(r.img.retStub)
	if !r.c.sync(env, r.table) {
		return &vm.RunError{PC: s.pc, Err: errTable}
	}
	return nil
}

func (r *run) callx(pc int) error {
	h := r.c.h
	target := h.exitAddr
	if target&^0xffff_ffff == interp.FuncValue(0) && target&0xffff_ffff < uint64(len(r.p.insns)) {
		if h.regs[10] <= h.minFP {
			return &vm.RunError{PC: pc, Err: vm.ErrCallDepth}
		}
		if r.reserve+int64(h.regs[11]) < 0 {
			return &vm.RunError{PC: pc, Err: vm.ErrBudget}
		}
		h.target = r.img.addr(int(target & 0xffff_ffff))
		return nil // resume as set by native code: the call sequence
	}
	// Not a subprogram: bpf_conformance's callx names a helper id.
	var fn vm.Helper
	if target <= 1<<31-1 && r.p.resolve != nil {
		fn = r.p.resolve(int32(target))
	}
	if fn == nil {
		return &vm.RunError{PC: pc, Err: fmt.Errorf("%w: callx to %#x", vm.ErrHelper, target)}
	}
	v, err := fn(r.env, h.regs[1], h.regs[2], h.regs[3], h.regs[4], h.regs[5])
	if err != nil {
		return &vm.RunError{PC: pc, Err: err}
	}
	h.regs[0] = v
	h.resume = r.img.addr(pc + 1)
	if !r.c.sync(r.env, r.table) {
		return &vm.RunError{PC: pc, Err: errTable}
	}
	return nil
}

// refill runs when native code finds its budget chunk used up at a check
// site (a backward jump or a call): it fails the run if the budget is
// exceeded, as the interpreter does, else checks the run's context (its
// deadline also by the clock), sizes the next chunk by how long this one
// took and hands it to native code.
func (r *run) refill(pc int) error {
	h := r.c.h
	left := int64(h.regs[11])
	total := r.reserve + left
	if total < 0 {
		return &vm.RunError{PC: pc, Err: vm.ErrBudget}
	}
	now := vm.Now()
	if err := r.env.Stopped(now); err != nil {
		return &vm.RunError{PC: pc, Err: err}
	}
	if r.last != 0 {
		r.chunk = vm.NextSlice(r.handed-left, now-r.last, minChunk, yieldChunk)
		r.img.chunk.Store(r.chunk)
	}
	chunk := min(total, r.chunk)
	r.reserve, r.handed, h.regs[11] = total-chunk, chunk, uint64(chunk)
	// Native code ran a whole chunk: let the runtime stop the world or
	// schedule other goroutines if it needs to. The time they take is not
	// the next chunk's.
	runtime.Gosched()
	r.last = vm.Now()
	return nil
}

// packetHeader serves an LD_ABS/LD_IND at a negative offset, which may
// name a header (vm.LoadPacket): it resumes after the load, or returns 0
// from the current function if nothing is there.
func (r *run) packetHeader(pc int) {
	h := r.c.h
	ins := r.p.insns[pc]
	off := uint64(int64(ins.Imm))
	if ins.Op&0xe0 == isa.ModeIND {
		off = uint64(int64(int32(uint32(h.regs[ins.Src]) + uint32(ins.Imm))))
	}
	v, ok := vm.LoadPacket(r.env, off, uint64(isa.SizeBytes(ins.Op)))
	h.regs[0] = v
	if !ok {
		h.resume = r.img.base + uint64(r.img.retStub)
	}
}

// ctxAccess emulates a load or store to the context region with
// env.CtxAccess, then resumes after the instruction.
func (r *run) ctxAccess(pc int) error {
	h := r.c.h
	env := r.env
	ins := r.p.insns[pc]
	d := h.exitDesc
	size := uint64(1) << (d & 3)
	off := h.exitAddr - env.Ctx.Start
	if d&descWrite != 0 {
		v := h.regs[ins.Src]
		if ins.Class() == isa.ClassST {
			v = uint64(int64(ins.Imm))
		}
		if _, err := env.CtxAccess(env, off, size, true, v); err != nil {
			return &vm.RunError{PC: pc, Err: err}
		}
	} else {
		v, err := env.CtxAccess(env, off, size, false, 0)
		if err != nil {
			return &vm.RunError{PC: pc, Err: err}
		}
		if ins.Op&0xe0 == isa.ModeMEMSX {
			switch size {
			case 1:
				v = uint64(int64(int8(v)))
			case 2:
				v = uint64(int64(int16(v)))
			case 4:
				v = uint64(int64(int32(v)))
			}
		}
		h.regs[ins.Dst] = v
	}
	h.resume = r.img.addr(pc + 1)
	if !r.c.sync(env, r.table) {
		return &vm.RunError{PC: pc, Err: errTable}
	}
	return nil
}

// Code returns a copy of the machine code compiled for a mode and the
// offset in it of every instruction slot, for disassembly (nil if that mode
// was not compiled).
func (p *Program) Code(checked bool) (code []byte, offsets []uint32) {
	img := p.compiled(checked)
	if img == nil {
		return nil, nil
	}
	return append([]byte(nil), img.code[:img.size]...), append([]uint32(nil), img.off...)
}
