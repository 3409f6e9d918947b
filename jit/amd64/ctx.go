//go:build amd64 && linux

package amd64

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"github.com/bpfvm/bpfvm/vm"
)

// header is the execution context that native code reaches through r12. It
// lives off the Go heap (in an execCtx's mapping), so native code and Go
// share it without the garbage collector or the race detector seeing
// native accesses. Field offsets are used by the code generator and by
// enter_amd64.s (keep the two in sync: see TestHeaderLayout).
type header struct {
	goSP     uint64 // 0: Go's SP at enter
	goBP     uint64 // 8: Go's BP at enter
	nativeSP uint64 // 16: native SP at the last exit, where enter resumes
	resume   uint64 // 24: native address enter jumps to
	exit     uint64 // 32: exit word: pc<<8 | exit code
	exitAddr uint64 // 40: address of a failed access, callx target
	exitDesc uint64 // 48: access descriptor of a failed access
	target   uint64 // 56: native address of a call's target (entry, callx)

	stackStart uint64    // 64: the live stack (vm.Env.LiveStack)
	stackLim   [4]uint64 // 72: stack length - access size + 1, per size index
	minFP      uint64    // 104: R10 at the deepest frame that may still call
	loops      uint64    // 112: may_goto budget
	pktStart   uint64    // 120: LD_ABS/LD_IND packet
	pktLen     uint64    // 128
	ctxStart   uint64    // 136: context region emulated by CtxAccess
	ctxLen     uint64    // 144
	ctxFlag    uint64    // 152: 1 if CtxAccess is set
	tablePtr   uint64    // 160: region table (env.Regions)
	tableEnd   uint64    // 168
	regs       [12]uint64
	running    uint64    // id of the program running on this context (Go only)
	hotStart   uint64    // the region the check routine matched last:
	hotLim     [4]uint64 // length - size + 1 per size index, for reads
	hotWLim    [4]uint64 // the same for writes (0 if read-only)
	cpu        uint64    // 352: env.CPU, for the native bpf_get_smp_processor_id
	rand       uint64    // 360: address of the run's vm.Rand (env.Rand or ownRand)
	ownRand    vm.Rand   // 368: the generator of runs without env.Rand
	// probeStack is the whole stack (env.Stack), which probe loads may
	// read, and probeStackLen its length.
	probeStack, probeStackLen uint64
	// Native repetitions (Repeat with vm.Env.QuietRepeat): reps is how
	// many more runs native code may start when one returns, repsDone
	// how many it started; each starts with R1, R2 and R10 from repR1,
	// repR2 and repFP and the other registers zero. Go clears reps when
	// it serves an exit that between must see (a helper, a tail call).
	reps, repsDone      uint64
	repR1, repR2, repFP uint64
	// kernPtr and kernEnd bound the kernel table, the world's kernel
	// memory probe loads read (env.Kernel): entries of the region
	// table's size after its regions, start, length and the host
	// address of the bytes.
	kernPtr, kernEnd uint64
}

// Offsets into header, for the code generator.
var (
	offGoSP          = int32(unsafe.Offsetof(header{}.goSP))
	offGoBP          = int32(unsafe.Offsetof(header{}.goBP))
	offNativeSP      = int32(unsafe.Offsetof(header{}.nativeSP))
	offResume        = int32(unsafe.Offsetof(header{}.resume))
	offExit          = int32(unsafe.Offsetof(header{}.exit))
	offExitAddr      = int32(unsafe.Offsetof(header{}.exitAddr))
	offExitDesc      = int32(unsafe.Offsetof(header{}.exitDesc))
	offTarget        = int32(unsafe.Offsetof(header{}.target))
	offStackStart    = int32(unsafe.Offsetof(header{}.stackStart))
	offStackLim      = int32(unsafe.Offsetof(header{}.stackLim))
	offMinFP         = int32(unsafe.Offsetof(header{}.minFP))
	offLoops         = int32(unsafe.Offsetof(header{}.loops))
	offPktStart      = int32(unsafe.Offsetof(header{}.pktStart))
	offPktLen        = int32(unsafe.Offsetof(header{}.pktLen))
	offCtxStart      = int32(unsafe.Offsetof(header{}.ctxStart))
	offCtxLen        = int32(unsafe.Offsetof(header{}.ctxLen))
	offCtxFlag       = int32(unsafe.Offsetof(header{}.ctxFlag))
	offTablePtr      = int32(unsafe.Offsetof(header{}.tablePtr))
	offTableEnd      = int32(unsafe.Offsetof(header{}.tableEnd))
	offRegs          = int32(unsafe.Offsetof(header{}.regs))
	offHotStart      = int32(unsafe.Offsetof(header{}.hotStart))
	offHotLim        = int32(unsafe.Offsetof(header{}.hotLim))
	offHotWLim       = int32(unsafe.Offsetof(header{}.hotWLim))
	offCPU           = int32(unsafe.Offsetof(header{}.cpu))
	offRand          = int32(unsafe.Offsetof(header{}.rand))
	offReps          = int32(unsafe.Offsetof(header{}.reps))
	offRepsDone      = int32(unsafe.Offsetof(header{}.repsDone))
	offRepR1         = int32(unsafe.Offsetof(header{}.repR1))
	offRepR2         = int32(unsafe.Offsetof(header{}.repR2))
	offRepFP         = int32(unsafe.Offsetof(header{}.repFP))
	offOwnRand       = int32(unsafe.Offsetof(header{}.ownRand))
	offProbeStack    = int32(unsafe.Offsetof(header{}.probeStack))
	offProbeStackLen = int32(unsafe.Offsetof(header{}.probeStackLen))
	offKernPtr       = int32(unsafe.Offsetof(header{}.kernPtr))
	offKernEnd       = int32(unsafe.Offsetof(header{}.kernEnd))
)

// A region table entry: start, length, writable (0 or 1).
const entrySize = 24

// Native stack: only bpf-to-bpf return addresses and saved registers live
// there (at most vm.MaxFrames frames of 48 bytes), plus the check routine's
// pushes. A guard page below it turns a bug into a fault, not corruption.
const (
	pageSize    = 4096
	nativeStack = 2 * pageSize
	guardSize   = pageSize
	headerArea  = pageSize // header, then the initial region table
)

var inlineEntries = (headerArea - int(unsafe.Sizeof(header{}))) / entrySize

// execCtx is one execution context: a native stack and a header. A run takes
// one from the pool for its duration; nested runs (callbacks and tail calls
// made from helpers) take their own.
type execCtx struct {
	res  *ctxMem
	base uint64 // address of the header
	h    *header
	cap  int // region table capacity in entries
}

type ctxMem struct {
	mem   *vm.Mem
	table *vm.Mem // a larger region table, when the inline one is too small
}

func (m *ctxMem) free() {
	m.mem.Free()
	if m.table != nil {
		m.table.Free()
	}
}

var ctxPool = sync.Pool{New: func() any { return newExecCtx() }}

func newExecCtx() *execCtx {
	m, err := vm.Alloc(guardSize + nativeStack + headerArea)
	if err != nil {
		return nil
	}
	b := m.Bytes()
	if err := mprotect(b[:guardSize], protNone); err != nil {
		m.Free()
		return nil
	}
	base := m.Addr() + guardSize + nativeStack
	c := &execCtx{res: &ctxMem{mem: m}, base: base, h: (*header)(vm.Ptr(base)), cap: inlineEntries}
	c.h.tablePtr = base + uint64(unsafe.Sizeof(header{}))
	c.h.ownRand.Seed(rand.Uint64(), rand.Uint64())
	runtime.AddCleanup(c, (*ctxMem).free, c.res)
	registry.Lock()
	registry.ctxs = append(registry.ctxs, weak.Make(c))
	registry.Unlock()
	return c
}

// registry lists the live execution contexts, for Close to find out
// whether a program is running.
var registry struct {
	sync.Mutex
	ctxs []weak.Pointer[execCtx]
}

// running reports whether a context runs the program with the given id.
// The caller has made the runs' marks visible (processBarrier).
func running(id uint64) bool {
	registry.Lock()
	defer registry.Unlock()
	live := registry.ctxs[:0]
	busy := false
	for _, w := range registry.ctxs {
		c := w.Value()
		if c == nil {
			continue
		}
		live = append(live, w)
		if c.h.running == id {
			busy = true
		}
	}
	clear(registry.ctxs[len(live):])
	registry.ctxs = live
	return busy
}

// stackTop is the native stack pointer of a fresh entry.
func (c *execCtx) stackTop() uint64 { return c.base }

// grow makes room for n region table entries.
func (c *execCtx) grow(n int) bool {
	if n > maxEntries {
		return false
	}
	if n <= c.cap {
		return true
	}
	c.h.hotLim = [4]uint64{}
	c.h.hotWLim = [4]uint64{}
	t, err := vm.Alloc(n * entrySize)
	if err != nil {
		return false
	}
	if c.res.table != nil {
		c.res.table.Free()
	}
	c.res.table = t
	c.cap = len(t.Bytes()) / entrySize
	c.h.tablePtr = t.Addr()
	return true
}

// sync copies what native code checks accesses against from env: the stack,
// the regions, the emulated context and the packet. It runs at entry and
// after every exit to Go that may have changed env (helpers move the packet,
// add callback regions, swap regions for tail calls). table says the code
// reads the stack and the region table: checked code, or code with probe
// loads.
func (c *execCtx) sync(env *vm.Env, table bool) bool {
	h := c.h
	h.syncPacket(env)
	if !table {
		return true
	}
	h.probeStack, h.probeStackLen = env.Stack.Start, 0
	if env.Stack.End > env.Stack.Start {
		h.probeStackLen = env.Stack.End - env.Stack.Start
	}
	// The inline stack check covers the live stack of the function
	// running (vm.Env.LiveStack), from R10's frame up; checked calls and
	// returns move its start a frame down and up (callFrame), so it is
	// derived here from the R10 of the last exit (or of the entry).
	st := env.Stack
	if fp := h.regs[10]; fp >= vm.StackSize && fp-vm.StackSize > st.Start {
		st.Start = fp - vm.StackSize
	}
	n := uint64(0)
	if st.End > st.Start {
		n = st.End - st.Start
	}
	h.stackStart = st.Start
	for i := range h.stackLim {
		size := uint64(1) << i
		h.stackLim[i] = 0
		if n >= size {
			h.stackLim[i] = n - size + 1
		}
	}
	changed := false
	var cflag, cstart, clen uint64
	if env.CtxAccess != nil && env.Ctx.End >= env.Ctx.Start {
		cflag, cstart, clen = 1, env.Ctx.Start, env.Ctx.End-env.Ctx.Start
	}
	if h.ctxFlag != cflag || h.ctxStart != cstart || h.ctxLen != clen {
		h.ctxFlag, h.ctxStart, h.ctxLen = cflag, cstart, clen
		changed = true
	}
	if n := len(env.Regions) + len(env.Kernel); n > min(c.cap, maxEntries) && !c.grow(n) {
		return false
	}
	t := (*[maxEntries]entry)(vm.Ptr(h.tablePtr))
	// The stack is not in the table: every access is checked against the
	// live stack inline before the table, and the dead frames below must
	// not match (nor become the hot region).
	k := 0
	for i := range env.Regions {
		r := &env.Regions[i]
		if r.End < r.Start {
			continue // contains nothing
		}
		w := uint64(0)
		if r.Writable {
			w = 1
		}
		if e := (entry{r.Start, r.End - r.Start, w}); t[k] != e {
			t[k], changed = e, true
		}
		k++
	}
	if end := h.tablePtr + uint64(k)*entrySize; h.tableEnd != end {
		h.tableEnd, changed = end, true
	}
	// The kernel table follows: the probe routine walks it after the
	// regions, the check routine never.
	h.kernPtr = h.tableEnd
	for i := range env.Kernel {
		km := &env.Kernel[i]
		if len(km.Data) == 0 {
			continue
		}
		t[k] = entry{km.Addr, uint64(len(km.Data)), uint64(uintptr(unsafe.Pointer(unsafe.SliceData(km.Data))))}
		k++
	}
	h.kernEnd = h.tablePtr + uint64(k)*entrySize
	if changed {
		// The hot region may be gone or have changed.
		h.hotLim = [4]uint64{}
		h.hotWLim = [4]uint64{}
	}
	return true
}

// maxEntries bounds the region table (env.Regions).
const maxEntries = 1 << 24

// entry is a region table entry as native code reads it.
type entry struct{ start, len, writable uint64 }

// syncPacket copies the packet bounds for LD_ABS and LD_IND.
func (h *header) syncPacket(env *vm.Env) {
	start, end := env.Packet.Start, env.Packet.End
	if end <= start {
		start, end = 0, 0
	}
	h.pktStart, h.pktLen = start, end-start
}
