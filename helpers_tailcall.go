package bpfvm

import (
	"sync"
	"sync/atomic"

	"bpfvm/vm"
)

// The live-program table gives programs ids, as the kernel's program IDR
// does: a prog_array holds program ids (what Map.Put stores for a
// *Program), and bpf_tail_call finds the program by id.
var (
	livePrograms sync.Map // uint32 id -> *Program
	lastProgID   atomic.Uint32
)

// register gives p an id and makes it a possible tail-call target.
func (p *Program) register() {
	p.id = lastProgID.Add(1)
	p.tail = vm.TailCall{Target: &tailTarget{p: p}}
	p.refs.Store(1)
	livePrograms.Store(p.id, p)
}

// unregister removes p from the live-program table once its last
// reference is gone: no tail call that starts from now on finds it.
func (p *Program) unregister() {
	if p.id != 0 {
		livePrograms.CompareAndDelete(p.id, p)
	}
}

// ID returns the program's id, unique in the process while the program is
// alive. It is what a prog_array stores for the program.
func (p *Program) ID() uint32 { return p.id }

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

// progArray is implemented by prog_array maps: the program id at an index.
type progArray interface {
	Get(index uint32) (id uint32, ok bool)
}

// helperTailCall is bpf_tail_call(ctx, prog_array, index). When a program
// is at index and the run has made fewer than vm.MaxTailCalls tail calls,
// it returns a *vm.TailCall and the engine runs the target in place of the
// caller; otherwise the caller continues after the call, as in the kernel.
//
// A target must belong to the same collection as the caller (it runs on
// the caller's runner, whose CPU number indexes the per-CPU maps of the
// collection) and have the same program type; other targets count as
// missing.
func helperTailCall(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r2)
	if err != nil {
		return 0, err
	}
	pa, ok := m.(progArray)
	if !ok {
		return neg(einval), nil
	}
	index := uint32(r3)
	if index >= m.Spec().MaxEntries || e.TailCalls >= vm.MaxTailCalls {
		return neg(enoent), nil
	}
	// The kernel counts the attempt even when the slot turns out empty.
	e.TailCalls++
	id, ok := pa.Get(index)
	if !ok {
		return neg(enoent), nil
	}
	target := programByID(id)
	caller := runnerOf(e).prog
	if target == nil || target.cpus != caller.cpus || target.pt != caller.pt {
		return neg(enoent), nil
	}
	return 0, &target.tail
}

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
	r := runnerOf(e)
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
	e.Checked = t.p.checked
	if e.CtxAccess != nil || caller.verified {
		e.CtxAccess = nil
		if !t.p.verified {
			e.CtxAccess = ctxAccess
		}
	}
	r.setPacket(r.pkt)
	v, err := t.p.engine.Run(e, r1, r2, budget)
	e.Checked, e.CtxAccess = checked, ctxAccessFn
	r.prog = caller
	r.regions = append(r.regions[:0], saved...)
	e.Regions = r.regions
	// The target may have moved the packet (bpf_xdp_adjust_head).
	r.setPacket(r.pkt)
	return v, err
}
