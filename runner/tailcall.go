package runner

import (
	"sync"
	"sync/atomic"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// The live-program table gives programs ids, as the kernel's program IDR
// does: a prog_array holds program ids (what Map.Put stores for a
// *Program), and bpf_tail_call finds the program by id.
var (
	livePrograms sync.Map // uint32 id -> *Program
	lastProgID   atomic.Uint32
)

// programByID returns the live program with the given id, or nil. It takes
// no lock: a program found by a run stays alive until the run leaves its
// epoch (Program.release).
func programByID(id uint32) *Program {
	v, ok := livePrograms.Load(id)
	if !ok {
		return nil
	}
	return v.(*Program)
}

// ProgramByID returns the live program with the given id (Program.ID), or
// nil: what cilium/ebpf's NewProgramFromID finds through the kernel's
// program IDR.
func ProgramByID(id uint32) *Program { return programByID(id) }

// Refs gives prog_array slots references to programs by id
// (maps.Options.Programs).
type Refs struct{}

// Acquire takes a reference to the live program id; false if there is none.
func (Refs) Acquire(id uint32) bool {
	p := programByID(id)
	return p != nil && p.acquire()
}

// Release drops a reference Acquire took.
func (Refs) Release(id uint32) {
	if p := programByID(id); p != nil {
		p.release()
	}
}

// progArray is implemented by prog_array maps: the program id at an index.
type progArray interface {
	Get(index uint32) (id uint32, ok bool)
}

// TailCall looks up the target of bpf_tail_call(ctx, m, index) for the
// running program: when m holds a program at index and the run has made
// fewer than vm.MaxTailCalls tail calls, it returns the *vm.TailCall the
// helper returns, and the engine runs the target in place of the caller;
// otherwise nil and the helper's negative errno, and the caller continues
// after the call, as in the kernel.
//
// A target must belong to the same collection as the caller (it runs on
// the caller's runner, whose CPU number indexes the per-CPU maps of the
// collection) and have the same program type; other targets count as
// missing.
func (r *Runner) TailCall(e *vm.Env, m maps.Map, index uint32) (*vm.TailCall, int64) {
	pa, ok := m.(progArray)
	if !ok {
		return nil, -einval
	}
	if index >= m.Spec().MaxEntries || e.TailCalls >= vm.MaxTailCalls {
		return nil, -enoent
	}
	// The kernel counts the attempt even when the slot turns out empty.
	e.TailCalls++
	id, ok := pa.Get(index)
	if !ok {
		return nil, -enoent
	}
	target := programByID(id)
	caller := r.prog
	if target == nil || target.CPUs != caller.CPUs || target.Type != caller.Type {
		return nil, -enoent
	}
	return &target.tail, 0
}

// Kernel errno values TailCall returns negated.
const (
	enoent = 2
	einval = 22
)

// tailTarget runs a program as the target of a tail call. In checked mode
// the target must see its own maps rather than the caller's: it swaps the
// run's regions (keeping the packet) and the running program, and restores
// both when the target returns, for the engine may continue in a caller
// frame (a tail call from a subprogram returns to that subprogram's caller).
type tailTarget struct{ p *Program }

func (t *tailTarget) Run(e *vm.Env, r1, r2, budget uint64) (uint64, error) {
	// Each target is a new run for the engine, whose first look at the
	// context comes only after a slice of work: look before it starts,
	// so that a chain of short targets stops in time too.
	if err := e.Stopped(vm.Now()); err != nil {
		return 0, err
	}
	r := Of(e)
	caller := r.prog
	depth := e.TailCalls
	for len(r.hs.tailSaves) <= depth {
		r.hs.tailSaves = append(r.hs.tailSaves, nil)
	}
	saved := append(r.hs.tailSaves[depth][:0], r.regions...)
	r.hs.tailSaves[depth] = saved

	r.regions = r.progRegions(r.regions[:1], t.p)
	e.Regions = r.regions
	r.prog = t.p
	// The target runs in its own mode: verified programs unchecked (or
	// checked with ProgramOptions.Checks), with their context loads
	// rewritten to read the packet pointers from shadow slots, which
	// setPacket fills; unverified ones checked with emulated context
	// accesses.
	checked, ctxAccessFn := e.Checked, e.CtxAccess
	arena, arenaUser := e.Arena, e.ArenaUser
	e.Checked = t.p.Checked
	e.Arena, e.ArenaUser = t.p.Arena, t.p.ArenaUser
	if e.CtxAccess != nil || caller.Verified {
		e.CtxAccess = nil
		if !t.p.Verified {
			e.CtxAccess = ctxAccess
		}
	}
	r.setPacket(r.pkt)
	v, err := t.p.Engine.Run(e, r1, r2, budget)
	v, err = r.catch(t.p, e, v, err) // the target's own exception callback
	e.Checked, e.CtxAccess = checked, ctxAccessFn
	e.Arena, e.ArenaUser = arena, arenaUser
	r.prog = caller
	r.regions = append(r.regions[:0], saved...)
	e.Regions = r.regions
	// The target may have moved the packet (bpf_xdp_adjust_head).
	r.setPacket(r.pkt)
	return v, err
}
