package maps

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bpfvm/bpfvm/vm"
)

// pool hands out fixed-size slots of one off-heap block: the elements of a
// hash map. A slot unlinked while programs may still read it is retired with
// a Domain tag and handed out again only once the Domain says that no run can
// still see it, so a lock-free reader never finds its element reused.
//
// Slots are taken from the free list first, then from reclaimed retired
// slots, then from the never-used tail (bump allocation), so pages of the
// tail are touched only when retirements pile up.
type pool struct {
	mem  *vm.Mem
	base uint64
	size uint64 // bytes per slot
	n    uint32 // slots
	d    *Domain

	mu      sync.Mutex
	free    []uint32
	retired []retiredSlot // in tag order
	fresh   atomic.Uint32 // slots [0, fresh) have been handed out at least once

	// poison, set by tests before use, overwrites reclaimed slots from byte
	// poisonFrom on, so a reader that sees reused memory notices.
	poison     bool
	poisonFrom uint64
	// poisonHook, when set, also poisons what belongs to slot i
	// elsewhere (an LPM trie's values).
	poisonHook func(i uint32)
}

type retiredSlot struct {
	idx uint32
	tag uint64
}

// poisonByte fills reclaimed slots when pool.poison is set.
const poisonByte = 0xa5

// allocWait is how long Go-side updates wait for retired slots to become
// reusable before giving up with ErrBusy.
const allocWait = time.Second

func (p *pool) init(size uint64, n uint32, d *Domain) error {
	total := size * uint64(n)
	if total > maxMapBytes {
		return fmt.Errorf("%d bytes of elements: %w", total, ErrFull)
	}
	mem, err := vm.Alloc(int(total))
	if err != nil {
		return err
	}
	p.mem, p.base, p.size, p.n, p.d = mem, mem.Addr(), size, n, d
	return nil
}

// addr returns the address of slot i.
func (p *pool) addr(i uint32) uint64 { return p.base + uint64(i)*p.size }

// index returns the slot at addr.
func (p *pool) index(addr uint64) uint32 { return uint32((addr - p.base) / p.size) }

// get returns a slot, or 0 when every slot is in use or retired and not yet
// safe to reuse. inRun says the caller is a program's run (a helper): when
// it is the only run inside any domain (Domain.Sole), the slots retired
// while it or earlier runs ran are reused before giving up, since no other
// run can still be reading them. Go-side callers pass false: they are not
// inside a run, and wait instead (getWait).
func (p *pool) get(inRun bool) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 && p.reclaimLocked(false) == 0 {
		if i := p.fresh.Load(); i < p.n {
			p.fresh.Store(i + 1)
			return p.addr(i)
		}
		if !inRun || p.reclaimLocked(p.d.Sole()) == 0 {
			return 0
		}
	}
	i := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return p.addr(i)
}

// getWait is get for Go callers, which may wait (holding no map lock) for
// running programs to leave and retired slots to become reusable.
func (p *pool) getWait() (uint64, error) {
	deadline := time.Now().Add(allocWait)
	for spin := 0; ; spin++ {
		if e := p.get(false); e != 0 {
			return e, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("all %d elements in use or awaiting reclamation: %w", p.n, ErrBusy)
		}
		if spin < 16 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// put returns a slot that was never published: it is reusable at once.
func (p *pool) put(addr uint64) {
	p.mu.Lock()
	p.free = append(p.free, p.index(addr))
	p.mu.Unlock()
}

// putIf is put for a slot that may be 0 (none).
func (p *pool) putIf(addr uint64) {
	if addr != 0 {
		p.put(addr)
	}
}

// retire defers the reuse of a slot just unlinked from the table.
func (p *pool) retire(addr uint64) {
	p.mu.Lock()
	// Taking the tag under mu keeps p.retired in tag order.
	p.retired = append(p.retired, retiredSlot{idx: p.index(addr), tag: p.d.Retire()})
	p.mu.Unlock()
}

// reclaimLocked moves retired slots that no run can see to the free list and
// returns how many it moved: all of them when sole (the caller is the only
// run, Domain.Sole), else those Safe says. Safe is monotonic in the tag, so
// the safe slots are a prefix of p.retired.
func (p *pool) reclaimLocked(sole bool) int {
	n := len(p.retired)
	if n == 0 {
		return 0
	}
	k := n
	if !sole && !p.d.Safe(p.retired[n-1].tag) {
		k = 0
		for k < n && p.d.Safe(p.retired[k].tag) {
			k++
		}
	}
	for _, r := range p.retired[:k] {
		if p.poison {
			b := bytesAt(p.addr(r.idx)+p.poisonFrom, p.size-p.poisonFrom)
			for i := range b {
				b[i] = poisonByte
			}
			if p.poisonHook != nil {
				p.poisonHook(r.idx)
			}
		}
		p.free = append(p.free, r.idx)
	}
	p.retired = append(p.retired[:0], p.retired[k:]...)
	return k
}

// region returns the span of all slots.
func (p *pool) region() (start, end uint64) { return p.base, p.base + p.size*uint64(p.n) }

func (p *pool) close() error {
	if p.mem == nil {
		return nil
	}
	err := p.mem.Free()
	p.mem = nil
	return err
}
