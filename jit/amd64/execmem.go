//go:build amd64 && linux

package amd64

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm/vm"
)

// Memory is a pool of executable memory in two tiers (seed 003):
//
//   - near memory: one address range reserved within rel32 reach of the
//     native routines (in the Go binary's text), handed out page by page
//     and charged against a limit, like the kernel's module space and
//     bpf_jit_limit; unprivileged loads have a lower limit;
//   - far memory: fresh mappings anywhere, used when near memory is
//     exhausted or over the limit; calls from it to native routines are
//     indirect.
//
// Pages are written while read-write and then made read-execute, never both
// (W^X); a freed near page is made inaccessible, its memory released, and
// its address range returned to the pool.
type Memory struct {
	cfg MemoryConfig

	mu       sync.Mutex
	reserved bool   // tried to reserve the near range
	arena    uint64 // near range start (0: none)
	pages    int    // near range size in pages
	free     []span // free runs of near pages, by start
	near     int    // near pages in use
	far      int    // far pages in use
}

type span struct{ start, pages int }

// NewMemory returns a pool with the given limits. Its near range is
// reserved on first use.
func NewMemory(cfg MemoryConfig) *Memory {
	if cfg.NearLimit <= 0 {
		cfg.NearLimit = DefaultNearLimit
	}
	if cfg.UnprivNearLimit <= 0 {
		cfg.UnprivNearLimit = cfg.NearLimit / 4
	}
	cfg.UnprivNearLimit = min(cfg.UnprivNearLimit, cfg.NearLimit)
	return &Memory{cfg: cfg}
}

const maxNearRange = 1 << 30

var defaultMemory = sync.OnceValue(func() *Memory { return NewMemory(MemoryConfig{}) })

// DefaultMemory is the process's pool, used when Options.Memory is nil. Like
// the kernel's bpf_jit_limit it is one budget for all programs.
func DefaultMemory() *Memory { return defaultMemory() }

// Usage returns the pages in use in each tier.
func (m *Memory) Usage() (near, far int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.near, m.far
}

// execAlloc is one image's executable memory.
type execAlloc struct {
	m     *Memory
	base  uint64
	pages int
	tier  Tier
	start int // first page in the near range (TierNear)
}

func (x *execAlloc) size() int { return x.pages * pageSize }

func (x *execAlloc) bytes() []byte {
	return unsafe.Slice((*byte)(vm.Ptr(x.base)), x.size())
}

// alloc returns executable memory for size bytes of code: near memory if
// the limit for the load allows and there is room, else far memory, else
// ErrNoMemory. far skips near memory.
func (m *Memory) alloc(size int, unpriv, far bool) (*execAlloc, error) {
	pages := (size + pageSize - 1) / pageSize
	if !far {
		if x := m.allocNear(pages, unpriv); x != nil {
			return x, nil
		}
	}
	m.mu.Lock()
	if m.cfg.FarLimit < 0 || m.cfg.FarLimit > 0 && (m.far+pages)*pageSize > m.cfg.FarLimit {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: far memory limit %d bytes reached", ErrNoMemory, m.cfg.FarLimit)
	}
	m.far += pages
	m.mu.Unlock()
	b, err := unix.Mmap(-1, 0, pages*pageSize, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		m.mu.Lock()
		m.far -= pages
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: mmap %d bytes: %v", ErrNoMemory, pages*pageSize, err)
	}
	return &execAlloc{m: m, base: uint64(uintptr(unsafe.Pointer(&b[0]))), pages: pages, tier: TierFar}, nil
}

func (m *Memory) allocNear(pages int, unpriv bool) *execAlloc {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := m.cfg.NearLimit
	if unpriv {
		limit = m.cfg.UnprivNearLimit
	}
	if (m.near+pages)*pageSize > limit {
		return nil
	}
	if !m.reserved {
		m.reserved = true
		m.reserve()
	}
	for i, s := range m.free {
		if s.pages < pages {
			continue
		}
		if s.pages == pages {
			m.free = append(m.free[:i], m.free[i+1:]...)
		} else {
			m.free[i] = span{s.start + pages, s.pages - pages}
		}
		m.near += pages
		return &execAlloc{m: m, base: m.arena + uint64(s.start*pageSize), pages: pages, tier: TierNear, start: s.start}
	}
	return nil
}

// reserve maps the near range inaccessible at an address from which every
// native routine is within rel32 reach, trying addresses above and below
// the text. Without one, all code goes to far memory.
func (m *Memory) reserve() {
	// At most 1 GiB, so that the range fits next to the text with room to
	// spare; a larger limit then only means the range fills up first.
	size := (min(m.cfg.NearLimit, maxNearRange) + pageSize - 1) &^ (pageSize - 1)
	const step = 64 << 20
	r := nativeRoutines
	var hints []uint64
	above := (r.hi + step) &^ (step - 1)
	for k := uint64(0); k < 24; k++ {
		hints = append(hints, above+k*step)
		if below := (r.lo &^ (step - 1)) - uint64(size) - (k+1)*step; below < r.lo {
			hints = append(hints, below)
		}
	}
	for _, h := range hints {
		addr, _, e := unix.Syscall6(unix.SYS_MMAP, uintptr(h), uintptr(size), unix.PROT_NONE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
		if e != 0 {
			continue
		}
		base := uint64(addr)
		if reach(r.lo, base, size) && reach(r.hi, base, size) {
			m.arena, m.pages = base, size/pageSize
			m.free = []span{{0, m.pages}}
			return
		}
		// An old kernel took the hint as a hint only: not near enough.
		unix.Syscall(unix.SYS_MUNMAP, addr, uintptr(size), 0)
	}
}

// write copies code into the allocation and makes it read-execute.
func (x *execAlloc) write(code []byte) error {
	b := x.bytes()
	if len(code) > len(b) {
		return fmt.Errorf("jit: %d bytes of code for %d bytes of memory", len(code), len(b))
	}
	if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return fmt.Errorf("jit: mprotect: %w", err)
	}
	copy(b, code)
	// Fill the rest of the last page with int3.
	for i := len(code); i < len(b); i++ {
		b[i] = 0xcc
	}
	if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		return fmt.Errorf("jit: mprotect: %w", err)
	}
	return nil
}

// free returns the memory to the pool: near pages become inaccessible and
// their memory is released; far mappings are unmapped.
func (x *execAlloc) free() {
	m := x.m
	b := x.bytes()
	if x.tier == TierFar {
		unix.Munmap(b)
		m.mu.Lock()
		m.far -= x.pages
		m.mu.Unlock()
		return
	}
	unix.Mprotect(b, unix.PROT_NONE)
	unix.Madvise(b, unix.MADV_DONTNEED)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.near -= x.pages
	i := sort.Search(len(m.free), func(i int) bool { return m.free[i].start > x.start })
	m.free = append(m.free, span{})
	copy(m.free[i+1:], m.free[i:])
	m.free[i] = span{x.start, x.pages}
	// Merge with the neighbours.
	if i+1 < len(m.free) && m.free[i].start+m.free[i].pages == m.free[i+1].start {
		m.free[i].pages += m.free[i+1].pages
		m.free = append(m.free[:i+1], m.free[i+2:]...)
	}
	if i > 0 && m.free[i-1].start+m.free[i-1].pages == m.free[i].start {
		m.free[i-1].pages += m.free[i].pages
		m.free = append(m.free[:i], m.free[i+1:]...)
	}
}
