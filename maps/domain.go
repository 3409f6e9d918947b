package maps

import (
	"slices"
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
// a tag from Retire and may be reused once Safe(tag) holds: every runner
// that is inside a run entered after the retirement, so it cannot have seen
// it. Entering and leaving cost one atomic load and store each.
//
// The epoch is process-wide and Safe looks at the runners of every live
// domain, as the kernel's RCU grace periods cover every CPU: a map can be
// reached from runs of other collections (as the inner map of their maps of
// maps, or in checked mode through the live-map table), so memory it
// retires must wait for those runs too.
type Domain struct {
	slots []slot
}

// slot holds epoch+1 while its runner is inside a run, 0 while idle. It is
// padded to a cache line so runners do not share lines.
type slot struct {
	v atomic.Uint64
	_ [56]byte
}

// Process-wide reclamation state, the counterpart of the kernel's RCU: the
// epoch, the live domains (copy on write: Safe reads them without a lock),
// and the frees waiting for a grace period (Defer).
var (
	epoch     atomic.Uint64
	domainsMu sync.Mutex
	domains   atomic.Pointer[[]*Domain]

	reclaimMu sync.Mutex
	pending   []deferred // in tag order
	freeing   int        // frees taken from pending and still running
	reclaimer bool       // a goroutine polls pending
)

// deferred is a free waiting for the runs inside when it was deferred.
type deferred struct {
	tag  uint64
	free func()
}

// NewDomain returns a domain for n runners. Its runs hold back reclamation
// until Close.
func NewDomain(n int) *Domain {
	d := &Domain{slots: make([]slot, max(n, 1))}
	domainsMu.Lock()
	defer domainsMu.Unlock()
	var list []*Domain
	if l := domains.Load(); l != nil {
		list = slices.Clone(*l)
	}
	list = append(list, d)
	domains.Store(&list)
	return d
}

// Close removes the domain from reclamation: its runners have stopped for
// good.
func (d *Domain) Close() {
	domainsMu.Lock()
	defer domainsMu.Unlock()
	l := domains.Load()
	if l == nil {
		return
	}
	list := slices.DeleteFunc(slices.Clone(*l), func(e *Domain) bool { return e == d })
	domains.Store(&list)
}

// Enter marks runner i as running.
func (d *Domain) Enter(i int) { d.slots[i].v.Store(epoch.Load() + 1) }

// Exit marks runner i as idle.
func (d *Domain) Exit(i int) { d.slots[i].v.Store(0) }

// Retire starts a new epoch and returns the tag of memory unlinked before
// the call. It does not depend on d, which may be nil (a map created
// outside a collection).
func (d *Domain) Retire() uint64 { return retire() }

// Safe reports whether memory retired with tag may be reused: no runner of
// any live domain is inside a run it entered before the retirement. It
// does not depend on d, which may be nil.
func (d *Domain) Safe(tag uint64) bool { return safe(tag) }

// Sole reports whether at most one run is inside any live domain. Called
// from a run, which is inside its own domain, it says that this run is the
// only one: no other run can have read a map's links or elements, so what
// the run (or anyone before it) unlinked may be reused at once, as the
// kernel's free lists reuse a deleted hash element within the run that
// deleted it. The run itself may still hold pointers into such memory
// (values it looked up before the delete); the memory stays the map's, so
// they stay memory-safe and see the element's new contents, as in the
// kernel. Runs that enter after the call cannot see what was unlinked
// before it, as for Safe. It does not depend on d, which may be nil.
func (d *Domain) Sole() bool { return sole() }

func sole() bool {
	l := domains.Load()
	if l == nil {
		return true
	}
	inside := 0
	for _, d := range *l {
		for i := range d.slots {
			if d.slots[i].v.Load() != 0 {
				if inside++; inside > 1 {
					return false
				}
			}
		}
	}
	return true
}

func retire() uint64 { return epoch.Add(1) }

func safe(tag uint64) bool {
	l := domains.Load()
	if l == nil {
		return true
	}
	for _, d := range *l {
		for i := range d.slots {
			if v := d.slots[i].v.Load(); v != 0 && v-1 < tag {
				return false
			}
		}
	}
	return true
}

// Defer calls free once every run inside now, in any domain, has left: the
// grace period of the kernel's call_rcu. The caller has made the object
// unreachable for runs that enter from now on. free runs at once when no
// run is inside, else on a background goroutine, so Defer never blocks,
// even when called from a run.
func Defer(free func()) {
	reclaimMu.Lock()
	// The tag is taken under reclaimMu so pending stays in tag order.
	tag := retire()
	if safe(tag) {
		reclaimMu.Unlock()
		free()
		return
	}
	pending = append(pending, deferred{tag: tag, free: free})
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
// many are still waiting or running (on another goroutine).
func Reclaim() int {
	reclaimMu.Lock()
	// Safe is monotonic in the tag: the frees ready are a prefix.
	k := 0
	for k < len(pending) && safe(pending[k].tag) {
		k++
	}
	ready := slices.Clone(pending[:k])
	pending = slices.Delete(pending, 0, k)
	freeing += k
	reclaimMu.Unlock()
	for _, p := range ready {
		p.free() // may defer more (a map's second grace period)
		reclaimMu.Lock()
		freeing--
		reclaimMu.Unlock()
	}
	reclaimMu.Lock()
	defer reclaimMu.Unlock()
	return len(pending) + freeing
}
