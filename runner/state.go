package runner

import (
	"slices"
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// helperState is what helpers keep per runner between calls: it belongs to
// one runner, so helpers that use it take no locks.
type helperState struct {
	// rng is bpf_get_prandom_u32's generator; vm.Env.Rand points at it so
	// the JIT's native routine steps the same state.
	rng vm.Rand

	// scratch holds the keys bpf_for_each_map_elem hands to its callback,
	// one slot pair per nesting level (callbacks can nest).
	scratch      *vm.Mem
	scratchDepth int

	// reserved are the ring buffer samples of the run not yet submitted or
	// discarded.
	reserved []reservation

	// locked is the address of the bpf_spin_lock the run holds, 0 for
	// none: released if the run ends holding it (only an unverified
	// program can), so that no later run waits for it forever.
	locked uint64

	// tailSaves keep the caller's regions across a tail call, one slice per
	// tail-call depth, reused from run to run.
	tailSaves [][]vm.Region

	// key is a small key buffer for map lookups helpers make themselves
	// (bpf_redirect_map), kept here so that the lookup does not allocate.
	key uint64
	// line is the output line of bpf_trace_printk, reused.
	line []byte

	// retval is the return value a cgroup hook's syscall gives
	// (bpf_get_retval, bpf_set_retval): 0 at the start of every run.
	retval int32

	// iters are the states of the run's open-coded iterators that do
	// not fit their stack slots (IterState); the slots hold handles.
	iters []any
}

// Scratch layout: scratchLevels nesting levels of two key slots each.
const (
	// ScratchKeyMax is the largest key a scratch slot holds: the kernel's
	// largest key (MAX_BPF_STACK).
	ScratchKeyMax = 512
	scratchLevels = vm.MaxFrames
	scratchSize   = scratchLevels * 2 * ScratchKeyMax
)

// beginRun prepares the runner's helper state for a run on a fresh packet.
// The headroom is zeroed, as in the kernel's test run (whose buffer is
// freshly allocated), so that bytes bpf_xdp_adjust_head or
// bpf_xdp_adjust_meta expose never leak from an earlier run. (A socket
// filter's packet starts after the Ethernet header, which stays.) The skb
// helpers zero the room they grow a socket buffer into themselves, as the
// kernel's do.
func (r *Runner) beginRun() {
	if !r.prog.Type.Skb {
		clear(vm.Slice(r.pkt.Start, min(r.pkt.Meta, r.pkt.Start+Headroom)-r.pkt.Start))
	}
	r.resetRun()
}

// resetRun resets what a run changes that the next repetition must not
// see; helpers restore the rest (regions, stack, the running program)
// before the run ends, and the packet stays as the run left it, as in the
// kernel's test run.
func (r *Runner) resetRun() {
	if p := r.prog; p != nil && p.Type.Keys != nil {
		keys := vm.Slice(r.buf.Addr()+flowKeys(p.Type), progtype.FlowKeysSize)
		p.Type.Keys.Reset(keys, r.keysIn, r.frame)
	}
	r.env.TailCalls = 0
	if r.redirected {
		r.redirect, r.redirected = Redirect{}, false
	}
	r.sk.clones = r.sk.clones[:0]
	r.tr.signals = r.tr.signals[:0]
	r.hs.scratchDepth = 0
	r.hs.retval = 0
	clear(r.hs.iters)
	r.hs.iters = r.hs.iters[:0]
	r.resetSelected()
}

// CgroupRetval is the return value the cgroup hook's syscall gives, as
// bpf_set_retval last set it in this run (bpf_get_retval).
func (r *Runner) CgroupRetval() int32 { return r.hs.retval }

// SetCgroupRetval sets the return value of the cgroup hook's syscall
// (bpf_set_retval).
func (r *Runner) SetCgroupRetval(v int32) { r.hs.retval = v }

// NewIterState keeps the state of an open-coded iterator for the rest of
// the run and returns its handle (never 0), which the iterator's stack
// slot holds: a program cannot write the slot, and a handle that is not
// one of the run's finds nothing.
func (r *Runner) NewIterState(s any) uint64 {
	r.hs.iters = append(r.hs.iters, s)
	return uint64(len(r.hs.iters))
}

// IterState returns the state of handle h, nil if there is none.
func (r *Runner) IterState(h uint64) any {
	if h == 0 || h > uint64(len(r.hs.iters)) {
		return nil
	}
	return r.hs.iters[h-1]
}

// DropIterState forgets the state of handle h (the iterator's _destroy).
func (r *Runner) DropIterState(h uint64) {
	if h != 0 && h <= uint64(len(r.hs.iters)) {
		r.hs.iters[h-1] = nil
	}
}

// nextRun ends a repetition and prepares the next: the engines call it
// between the runs of RunOptions.Repeat (as runner.between, made once).
// It stops the test run if its context is done, as the kernel's stops on a
// pending signal, looking at it every few repetitions (vm.Pacer: a short
// repetition may not reach the engines' own looks).
func (r *Runner) nextRun() error {
	if len(r.hs.reserved) > 0 || r.hs.locked != 0 {
		r.endRun()
	}
	r.resetRun()
	if err := r.pace.Stopped(&r.env); err != nil {
		return err
	}
	return nil
}

// endRun releases what a run left behind: ring buffer samples reserved and
// never submitted are discarded so that consumers do not stall on them
// (the verifier rules such programs out in the kernel).
func (r *Runner) endRun() {
	for _, res := range r.hs.reserved {
		res.ring.Commit(vm.Ptr(res.addr), true)
	}
	r.hs.reserved = r.hs.reserved[:0]
	if r.hs.locked != 0 {
		maps.UnlockSpin((*uint32)(vm.Ptr(r.hs.locked)))
		r.hs.locked = 0
	}
}

// HoldLock records that the run takes the bpf_spin_lock at addr; false if
// it holds one already (the verifier allows one at a time, so only an
// unverified program can, which would wait for itself).
func (r *Runner) HoldLock(addr uint64) bool {
	if r.hs.locked != 0 {
		return false
	}
	r.hs.locked = addr
	return true
}

// HoldsLock reports whether the run holds a bpf_spin_lock.
func (r *Runner) HoldsLock() bool { return r.hs.locked != 0 }

// DropLock records that the run releases the bpf_spin_lock at addr; false
// if it does not hold that lock.
func (r *Runner) DropLock(addr uint64) bool {
	if r.hs.locked != addr || addr == 0 {
		return false
	}
	r.hs.locked = 0
	return true
}

// freeHelperState frees the runner's off-heap helper memory.
func (r *Runner) freeHelperState() {
	if r.hs.scratch != nil {
		r.hs.scratch.Free()
		r.hs.scratch = nil
	}
}

// AddRegion lets the rest of the run access reg (in checked mode).
func (r *Runner) AddRegion(e *vm.Env, reg vm.Region) {
	r.regions = append(r.regions, reg)
	e.Regions = r.regions
}

// RemoveRegion undoes AddRegion. It removes the last region equal to reg,
// keeping the order of the others (regions[0] is the packet).
func (r *Runner) RemoveRegion(e *vm.Env, reg vm.Region) {
	for i := len(r.regions) - 1; i > 0; i-- {
		if r.regions[i] == reg {
			r.regions = append(r.regions[:i], r.regions[i+1:]...)
			break
		}
	}
	e.Regions = r.regions
}

// EnterCallbacks prepares calls of callbacks (bpf_loop,
// bpf_for_each_map_elem) from the helper running: a callback runs on the
// stack below the calling function's frame, and the calling frames above
// stay accessible, as the helpers' context argument points into them.
// extra, when not empty, is more memory the callbacks may access. It
// returns the calling frames' region, to pass to LeaveCallbacks with extra.
func (r *Runner) EnterCallbacks(e *vm.Env, extra vm.Region) (frames vm.Region) {
	frames = vm.Region{Start: e.FP - vm.StackSize, End: e.Stack.End, Writable: true}
	r.AddRegion(e, frames)
	if extra.End > extra.Start {
		r.AddRegion(e, extra)
	}
	return frames
}

// LeaveCallbacks undoes EnterCallbacks.
func (r *Runner) LeaveCallbacks(e *vm.Env, frames, extra vm.Region) {
	if extra.End > extra.Start {
		r.RemoveRegion(e, extra)
	}
	r.RemoveRegion(e, frames)
}

// Callback runs the subprogram fn of the running program with arguments
// a1-a5, between EnterCallbacks and LeaveCallbacks.
func (r *Runner) Callback(e *vm.Env, fn, a1, a2, a3, a4, a5 uint64) (uint64, error) {
	return r.prog.Engine.Call(e, fn, a1, a2, a3, a4, a5)
}

// ScratchSlots returns two key slots for the current nesting level and
// enters the next level; leave it with LeaveScratch.
func (r *Runner) ScratchSlots() (cur, next uint64, ok bool) {
	if r.hs.scratch == nil {
		m, err := vm.Alloc(scratchSize)
		if err != nil {
			return 0, 0, false
		}
		r.hs.scratch = m
	}
	d := r.hs.scratchDepth
	if d >= scratchLevels {
		return 0, 0, false
	}
	r.hs.scratchDepth++
	base := r.hs.scratch.Addr() + uint64(d)*2*ScratchKeyMax
	return base, base + ScratchKeyMax, true
}

// Random returns the next value of the runner's generator (seeded when the
// runner is made).
func (r *Runner) Random() uint32 { return r.hs.rng.Uint32() }

// KeyPtr returns a pointer to the runner's small key buffer, holding v in
// host byte order over size bytes (4 or 8).
func (r *Runner) KeyPtr(v uint64, size uint32) unsafe.Pointer {
	k := unsafe.Pointer(&r.hs.key)
	if size == 4 {
		*(*uint32)(k) = uint32(v)
	} else {
		r.hs.key = v
	}
	return k
}

// LeaveScratch leaves the nesting level ScratchSlots entered.
func (r *Runner) LeaveScratch() { r.hs.scratchDepth-- }

// Committer is a ring buffer samples are reserved in (maps.RingBuffer).
type Committer interface {
	Commit(sample unsafe.Pointer, discard bool)
}

// reservation is a ring buffer sample a run reserved and has not yet
// submitted or discarded.
type reservation struct {
	addr, size uint64
	ring       Committer
}

// Reserve records that the run reserved size bytes at addr in ring, which
// the run may write until Commit; a sample still reserved when the run
// ends is discarded.
func (r *Runner) Reserve(e *vm.Env, ring Committer, addr, size uint64) {
	r.hs.reserved = append(r.hs.reserved, reservation{addr: addr, size: size, ring: ring})
	r.AddRegion(e, vm.Region{Start: addr, End: addr + size, Writable: true})
}

// Commit submits or discards the sample at addr the run reserved; false
// if the run holds no such sample.
func (r *Runner) Commit(e *vm.Env, addr uint64, discard bool) bool {
	for i, res := range r.hs.reserved {
		if res.addr != addr {
			continue
		}
		r.hs.reserved = append(r.hs.reserved[:i], r.hs.reserved[i+1:]...)
		r.RemoveRegion(e, vm.Region{Start: addr, End: addr + res.size, Writable: true})
		res.ring.Commit(vm.Ptr(addr), discard)
		return true
	}
	return false
}

// GrantRegion lets the rest of the run access reg (in checked mode) unless
// a region equal to it does already: the slabs of allocated objects, which
// kfuncs hand out one object at a time.
func (r *Runner) GrantRegion(e *vm.Env, reg vm.Region) {
	if !e.Checked || slices.Contains(r.regions, reg) {
		return
	}
	r.AddRegion(e, reg)
}
