package maps

import (
	"sync/atomic"
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

// slot holds epoch+1 while its runner is inside a run, 0 while idle. It is
// padded to a cache line so runners do not share lines.
type slot struct {
	v atomic.Uint64
	_ [56]byte
}

// NewDomain returns a domain for n runners.
func NewDomain(n int) *Domain {
	return &Domain{slots: make([]slot, max(n, 1))}
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
