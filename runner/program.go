package runner

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// Engine is what a runner needs of an engine's compiled program: runs,
// repeated runs, and calls of its functions for callback helpers such as
// bpf_loop. The interpreter's and the JIT's programs implement it.
type Engine interface {
	Run(env *vm.Env, r1, r2, budget uint64) (uint64, error)
	Repeat(env *vm.Env, r1, r2, budget uint64, n uint32, between func() error) (uint64, error)
	Call(env *vm.Env, fn uint64, r1, r2, r3, r4, r5 uint64) (uint64, error)
}

// Program is a loaded program as runners run it: its engine, its memory
// mode, the maps it references and what its helpers report. The load
// pipeline fills it in; New then gives it an id and its lifetime.
//
// Release drops references (the loader's, and one per prog_array slot);
// the last one makes the program unreachable for tail calls and frees its
// code, its own runners and its references to maps once no run can still
// be inside it.
type Program struct {
	// Name names the program in errors.
	Name string
	// Kind is the kernel program type, which some helpers' results
	// depend on (XDP verdicts or tc actions).
	Kind ebpf.ProgramType
	// Type is the program type's description: context, test-run input.
	Type *progtype.Type
	// Engine runs the program.
	Engine Engine
	// Catch says how its runs catch bpf_throw (throw.go).
	Catch Catch
	// Arena and ArenaUser are its arena's window base and the upper half
	// of its user addresses (vm.Env.Arena), 0 without one.
	Arena, ArenaUser uint64
	// Verified says the program passed the verifier: its context loads
	// of packet pointers read the shadow slots (Shadow).
	Verified bool
	// Checked says accesses are validated at run time.
	Checked bool
	// Budget limits the instructions of one run (0: none).
	Budget uint64
	// MaxCtx is the end of the furthest context access the verifier saw
	// (verifier.Result.MaxCtxOffset; 0 when not verified).
	MaxCtx uint32
	// MaxTP is the end of the furthest access to a writable raw
	// tracepoint's buffer the verifier saw (verifier.Result.MaxTPAccess).
	MaxTP uint32
	// MaxRdonly and MaxRdwr are the ends of the furthest accesses to a
	// map iterator's key and value buffers the verifier saw
	// (verifier.Result.MaxRdonlyAccess, MaxRdwrAccess), which the walk
	// checks against the map's sizes.
	MaxRdonly, MaxRdwr uint32
	// FuncArgs is the number of u64 argument slots of the function a
	// trampoline program (fentry, fexit, fmod_ret, lsm) is attached to,
	// what bpf_get_func_arg_cnt returns; FuncRet says the slot after them
	// holds the return value (fexit, fmod_ret) for bpf_get_func_ret.
	FuncArgs uint32
	FuncRet  bool
	// Objects, for a program of a type with a netfilter test run
	// (progtype.Type.Hook), are the kernel structures' fields its runs lay
	// out, from the kernel BTF it was loaded against (ObjectsOf); nil
	// makes such runs fail with progtype.ErrNotSupported.
	Objects *Objects
	// KernelTypes is the kernel's BTF the program was verified against
	// (nil: none): what bpf_btf_find_by_name_kind searches, and by which
	// helpers read the kernel objects a program passes them (the socket
	// casts, bpf_d_path, bpf_snprintf_btf's type ids).
	KernelTypes *btf.Spec
	// layouts memoises what helpers derive from KernelTypes (Layout).
	layouts sync.Map
	// Maps are the maps the program references, by index.
	Maps []maps.Map
	// Regions are the map memory checked runs may access from the start.
	Regions []vm.Region
	// StrValues are the values of the read-only single-value arrays, which
	// bound the constant strings helpers read.
	StrValues []vm.Region
	// Output receives bpf_trace_printk lines (nil: discarded).
	Output io.Writer
	// Task is what the bpf_get_current_* helpers report (nil: the host).
	Task *Task
	// CPUs are the runners the program runs on; OwnCPUs says the program
	// holds the reference NewCPUs gave (a program outside any collection),
	// which it drops when freed.
	CPUs    *CPUs
	OwnCPUs bool
	// Owner is what the load pipeline wraps the program in (the root
	// package's *Program), for lookups by id (ProgramByID). Set before
	// Start.
	Owner any

	id     uint32      // in the live-program table (tailcall.go)
	tail   vm.TailCall // what bpf_tail_call returns to jump here
	closed atomic.Bool // the loader's reference is gone
	refs   atomic.Int32
	// holdsCPUs says the program holds a reference to CPUs, dropped when
	// it is freed (OwnCPUs, HoldCPUs).
	holdsCPUs atomic.Bool
}

// Start gives p an id and its first reference, the loader's, making it a
// possible tail-call target. Call it once, when p is complete.
func (p *Program) Start() {
	p.id = lastProgID.Add(1)
	p.tail = vm.TailCall{Target: &tailTarget{p: p}}
	p.refs.Store(1)
	p.holdsCPUs.Store(p.OwnCPUs)
	livePrograms.Store(p.id, p)
}

// HoldCPUs makes the program keep its runners open until it is freed, as a
// program its collection hands out must outlive the collection's Close;
// false if the runners are closed already.
func (p *Program) HoldCPUs() bool {
	if p.holdsCPUs.Load() {
		return true
	}
	if !p.CPUs.Hold() {
		return false
	}
	if !p.holdsCPUs.CompareAndSwap(false, true) {
		p.CPUs.Drop() // held meanwhile
	}
	return true
}

// ID returns the program's id, unique in the process while the program is
// alive: what a prog_array stores for it.
func (p *Program) ID() uint32 { return p.id }

// Close drops the loader's reference: runs that start from now on fail
// with maps.ErrClosed, while prog_array slots holding the program keep it
// callable. Closing twice is safe.
func (p *Program) Close() {
	if !p.closed.Swap(true) {
		p.release()
	}
}

// Closed reports whether Close was called.
func (p *Program) Closed() bool { return p.closed.Load() }

// acquire takes a reference for a prog_array slot; false once the last
// reference is gone.
func (p *Program) acquire() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference. The last one makes the program unreachable
// for tail calls and frees it once no run can be inside it.
func (p *Program) release() {
	if p.refs.Add(-1) != 0 {
		return
	}
	if p.id != 0 {
		livePrograms.CompareAndDelete(p.id, p)
	}
	maps.Defer(p.free)
}

// free releases the code, the runners of a standalone program and the
// references to the maps.
func (p *Program) free() {
	if p.holdsCPUs.Load() {
		p.CPUs.Drop()
	}
	if c, ok := p.Engine.(io.Closer); ok {
		c.Close() // JIT machine code
	}
	for _, m := range p.Maps {
		m.Release()
	}
}

// Layout returns what build derives from the program's KernelTypes (a
// helper's offsets of kernel structures), built at the first call for key
// and kept with the program, so runs do not search the BTF again.
func (p *Program) Layout(key any, build func(*btf.Spec) any) any {
	if v, ok := p.layouts.Load(key); ok {
		return v
	}
	v, _ := p.layouts.LoadOrStore(key, build(p.KernelTypes))
	return v
}
