package maps

import (
	"sync"
	"sync/atomic"
	"time"
)

// Domain defers the reuse of map memory until no running program can still
// hold a pointer to it: epoch-based reclamation, the userspace counterpart of
// the kernel's RCU read-side sections around program runs.
//
// Each runner (one per CPU number) announces the epoch it entered at and
// clears it when the run ends. Memory unlinked by an update is retired with
// a tag from Retire and may be reused once Safe(tag) holds: every runner that
// is inside a run entered after the retirement, so it cannot have seen it.
// Entering and leaving cost one atomic load and store each.
type Domain struct {
	epoch atomic.Uint64
	slots []slot
}

// The live domains and the objects waiting for them. A map's memory is
// freed (and a program's code released) only once every run of every
// domain that was inside when it became unreachable has left: handles cross
// collections (maps of maps, checked-mode handles from the live-map table),
// so a run of any collection may hold one.
var (
	domainsMu sync.Mutex
	domains   = map[*Domain]struct{}{}

	reclaimMu sync.Mutex
	pending   []deferred // objects waiting for their grace period
	reclaimer bool       // a goroutine polls pending
)

// deferred is a free waiting for the runs inside when it was deferred.
type deferred struct {
	wait []retiredIn
	free func()
}

type retiredIn struct {
	d   *Domain
	tag uint64
}

// slot holds epoch+1 while its runner is inside a run, 0 while idle. It is
// padded to a cache line so runners do not share lines.
type slot struct {
	v atomic.Uint64
	_ [56]byte
}

// NewDomain returns a domain for n runners. It takes part in every grace
// period (Defer) until Close.
func NewDomain(n int) *Domain {
	d := &Domain{slots: make([]slot, max(n, 1))}
	domainsMu.Lock()
	domains[d] = struct{}{}
	domainsMu.Unlock()
	return d
}

// Close removes the domain from grace periods: its runners have stopped
// for good.
func (d *Domain) Close() {
	domainsMu.Lock()
	delete(domains, d)
	domainsMu.Unlock()
}

// Defer calls free once no run of any domain that is inside a run now can
// still be inside it: the grace period of the kernel's call_rcu. The caller
// has made the object unreachable for runs that enter from now on. free
// runs at once when no run is inside (the common case), else on a
// background goroutine, so Defer never blocks, even when called from a run.
func Defer(free func()) {
	var wait []retiredIn
	domainsMu.Lock()
	for d := range domains {
		if tag := d.Retire(); !d.Safe(tag) {
			wait = append(wait, retiredIn{d, tag})
		}
	}
	domainsMu.Unlock()
	if len(wait) == 0 {
		free()
		return
	}
	reclaimMu.Lock()
	pending = append(pending, deferred{wait: wait, free: free})
	start := !reclaimer
	reclaimer = true
	reclaimMu.Unlock()
	if start {
		go reclaim()
	}
}

// reclaim polls the pending frees until none is left, backing off while
// runs stay inside.
func reclaim() {
	sleep := 20 * time.Microsecond
	for {
		time.Sleep(sleep)
		if Reclaim() == 0 {
			reclaimMu.Lock()
			if len(pending) == 0 {
				reclaimer = false
				reclaimMu.Unlock()
				return
			}
			reclaimMu.Unlock()
		}
		sleep = min(2*sleep, 5*time.Millisecond)
	}
}

// Reclaim runs the pending frees whose grace period is over and returns how
// many are still waiting.
func Reclaim() int {
	reclaimMu.Lock()
	var ready []func()
	k := 0
	for _, p := range pending {
		if p.safe() {
			ready = append(ready, p.free)
		} else {
			pending[k] = p
			k++
		}
	}
	clear(pending[k:])
	pending = pending[:k]
	reclaimMu.Unlock()
	for _, f := range ready {
		f() // may defer more (a map's second grace period)
	}
	reclaimMu.Lock()
	defer reclaimMu.Unlock()
	return len(pending)
}

func (p *deferred) safe() bool {
	for _, w := range p.wait {
		if !w.d.Safe(w.tag) {
			return false
		}
	}
	return true
}

// Enter marks runner i as running.
func (d *Domain) Enter(i int) { d.slots[i].v.Store(d.epoch.Load() + 1) }

// Exit marks runner i as idle.
func (d *Domain) Exit(i int) { d.slots[i].v.Store(0) }

// Retire starts a new epoch and returns the tag of memory unlinked before
// the call. A nil Domain (a map no program runs on) returns 0.
func (d *Domain) Retire() uint64 {
	if d == nil {
		return 0
	}
	return d.epoch.Add(1)
}

// Safe reports whether memory retired with tag may be reused.
func (d *Domain) Safe(tag uint64) bool {
	if d == nil {
		return true
	}
	for i := range d.slots {
		if v := d.slots[i].v.Load(); v != 0 && v-1 < tag {
			return false
		}
	}
	return true
}
