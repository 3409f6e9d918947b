package runner

import (
	"errors"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// Catch is how runs of a program catch bpf_throw (a *vm.Thrown error,
// which unwinds every frame of the engines): what the runner that started
// the run (or the tail call into the program) does instead of failing.
type Catch struct {
	// Throws says the program calls bpf_throw: its repeated runs go one
	// by one, each caught.
	Throws bool
	// Callback is the exception callback, as the engines' callback value
	// (interp.FuncValue), when HasCallback; without one the cookie is the
	// program's result, as the kernel's default callback returns it.
	Callback    uint64
	HasCallback bool
}

// repeat runs p n times as its engine's Repeat does, catching bpf_throw
// in each run.
func (r *Runner) repeat(p *Program, env *vm.Env, r1, r2 uint64, n uint32) (uint64, error) {
	if !p.Catch.Throws {
		return p.Engine.Repeat(env, r1, r2, p.Budget, n, r.between)
	}
	for {
		v, err := p.Engine.Run(env, r1, r2, p.Budget)
		v, err = r.catch(p, env, v, err)
		if n <= 1 || err != nil {
			return v, err
		}
		n--
		if err := r.between(); err != nil {
			return 0, err
		}
	}
}

// catch turns a run of p that ended with bpf_throw into its result: what
// the run holds is released (the verifier lets nothing be held at a
// throw, but a global function may throw while its caller holds a ring
// buffer sample, which the kernel then leaks), then the exception
// callback runs with the cookie on the emptied stack, as the entry
// function would, and its R0 is the result. Other errors pass.
func (r *Runner) catch(p *Program, env *vm.Env, v uint64, err error) (uint64, error) {
	var t *vm.Thrown
	if err == nil || !errors.As(err, &t) {
		return v, err
	}
	r.unwind(env)
	if !p.Catch.HasCallback {
		return t.Cookie, nil
	}
	// The callback's frame is the entry frame: Call runs it below FP.
	fp := env.FP
	env.FP = env.Stack.End + vm.StackSize
	v, err = p.Engine.Call(env, p.Catch.Callback, t.Cookie, 0, 0, 0, 0)
	env.FP = fp
	return v, err
}

// unwind releases what a run that threw holds: its ring buffer samples
// are discarded and its bpf_spin_lock released.
func (r *Runner) unwind(e *vm.Env) {
	for _, res := range r.hs.reserved {
		r.RemoveRegion(e, vm.Region{Start: res.addr, End: res.addr + res.size, Writable: true})
		res.ring.Commit(vm.Ptr(res.addr), true)
	}
	r.hs.reserved = r.hs.reserved[:0]
	if r.hs.locked != 0 {
		maps.UnlockSpin((*uint32)(vm.Ptr(r.hs.locked)))
		r.hs.locked = 0
	}
}
