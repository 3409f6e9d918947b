package maps

import (
	"sync"
	"sync/atomic"

	"github.com/bpfvm/bpfvm/vm"
)

// LRU hash maps evict with the clock (second chance) algorithm, an
// approximation of least-recently-used as the kernel's own LRU lists are:
//
//   - a lookup from a program sets the element's referenced mark
//     (HashElemRef) unless already set: one load, rarely a store, no lock;
//   - an insertion into a full map advances a hand over the element pool:
//     a marked element loses its mark and is passed over, the first unmarked
//     one that is in the table is evicted (unlinked under its bucket lock and
//     retired like a deleted element).
//
// New elements start unmarked and replaced ones inherit a mark, as in the
// kernel. So an element survives eviction while programs look it up at
// least once per sweep of the hand; among the unreferenced ones the order is
// the pool's, not strictly the age of the last use. Go-side lookups do not
// mark, as the kernel's syscall lookups do not. Unlike the kernel, which may
// evict early because its free lists are per CPU, eviction happens only
// when the map holds max_entries keys, and never for replacing a key.
type clock struct {
	mu   sync.Mutex
	hand uint32
}

// evict unlinks one element, or reports false when none could be found
// (every element is being inserted right now).
func (m *hashMap) evict() bool {
	m.clock.mu.Lock()
	defer m.clock.mu.Unlock()
	if m.count.Load() < m.max {
		return true // a delete or another eviction made room meanwhile
	}
	// Two sweeps clear every mark; a third allows for marks set again by
	// programs during the first two.
	for range 3 {
		used := m.elems.fresh.Load()
		for range used {
			i := m.clock.hand
			if i >= used {
				i = 0
			}
			m.clock.hand = i + 1
			e := m.elems.addr(i)
			ref := (*uint32)(vm.Ptr(e + HashElemRef))
			if atomic.LoadUint32(ref) != 0 {
				atomic.StoreUint32(ref, 0)
				continue
			}
			if m.evictElem(e) {
				return true
			}
		}
	}
	return false
}

// evictElem unlinks e if it is in the table. The pool slot may be free,
// retired or being prepared; its hash then names some bucket that does not
// hold it, which the walk finds out.
func (m *hashMap) evictElem(e uint64) bool {
	hash := atomic.LoadUint32((*uint32)(vm.Ptr(e + HashElemHash)))
	b := hash & m.mask
	m.locks[b].Lock()
	defer m.locks[b].Unlock()
	link := m.bucket(hash)
	for x := load(link); x != 0; link, x = x, load(x+HashElemNext) {
		if x == e {
			store(link, load(e+HashElemNext))
			m.count.Add(-1)
			m.unlink(e)
			return true
		}
	}
	return false
}
