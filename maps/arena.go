package maps

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"syscall"
	"unsafe"

	"github.com/bpfvm/bpfvm/internal/errs"
	"github.com/bpfvm/bpfvm/vm"
)

// Arena is BPF_MAP_TYPE_ARENA (see ArenaMap).
const Arena Type = 33

// Arena flags, as the kernel's UAPI.
const (
	FlagSegvOnFault uint32 = 1 << 17 // BPF_F_SEGV_ON_FAULT
	FlagNoUserConv  uint32 = 1 << 18 // BPF_F_NO_USER_CONV
)

// ArenaPage is the arena's page size: the kernel's PAGE_SIZE on x86-64.
const ArenaPage = 4096

// ArenaGuard is the guard on each side of the arena's 4 GiB window: an
// access adds the instruction's 16-bit offset to a 32-bit arena offset,
// so it lands at most 32 KiB outside (the kernel's GUARD_SZ is twice
// that).
const ArenaGuard = vm.ArenaGuard

// arenaWindow is the span a 32-bit arena offset addresses.
const arenaWindow = vm.ArenaWindow

// arenaInfo describes arenas: no keys, no values, max_entries pages,
// map_extra the user address of their first page; programs reach them by
// their kfuncs.
var arenaInfo = typeInfo{maps: arenas{}, kernelStruct: "bpf_arena", mapExtra: true, notInner: true, noBatch: true}

// arenas creates and validates arenas.
type arenas struct{}

func (arenas) create(s Spec, o Options) (Map, error) { return newArena(s) }
func (arenas) check(s Spec) error                    { return validateArena(s) }

// validateArena applies the kernel's arena_map_alloc rules.
func validateArena(s Spec) error {
	if s.KeySize != 0 || s.ValueSize != 0 || s.MaxEntries == 0 || s.Flags&FlagMmapable == 0 ||
		s.Flags&^(FlagSegvOnFault|FlagMmapable|FlagNoUserConv) != 0 {
		return fmt.Errorf("%s key size %d, value size %d, max_entries %d, flags %#x: want 0, 0, pages, BPF_F_MMAPABLE: %w",
			s.Type, s.KeySize, s.ValueSize, s.MaxEntries, s.Flags, ErrInvalid)
	}
	if s.MapExtra%ArenaPage != 0 {
		return fmt.Errorf("%s map_extra %#x: not page aligned: %w", s.Type, s.MapExtra, ErrInvalid)
	}
	size := uint64(s.MaxEntries) * ArenaPage
	if size > arenaWindow {
		return fmt.Errorf("%s of %d pages: over 4 GiB: %w", s.Type, s.MaxEntries, ErrFull)
	}
	if s.MapExtra>>32 != (s.MapExtra+size-1)>>32 {
		return fmt.Errorf("%s map_extra %#x: the pages cross a 4 GiB boundary: %w", s.Type, s.MapExtra, ErrRange)
	}
	return nil
}

// ErrRange is the kernel's ERANGE.
var ErrRange = errors.New("numerical result out of range")

// ErrFault is the kernel's EFAULT: user space touched an arena page that
// BPF_F_SEGV_ON_FAULT keeps from being faulted in.
var ErrFault = errs.New("bad address", syscall.EFAULT)

// ArenaMap is an arena: memory programs and user space share, handed out
// in pages by bpf_arena_alloc_pages. Programs address it with 32-bit
// offsets (the low half of an arena pointer) from the base of a 4 GiB
// window, mapped whole without reserving memory (pages are there when
// touched), with a guard on each side: whatever offset a program computes,
// its access stays in the window, never in the host's memory. User space
// sees the pages through Memory (UserView), at the offsets of their user
// addresses: the user address U of a page is at Base + U's low 32 bits,
// as the kernel maps the user VMA and its kernel window.
//
// As in the kernel, programs read 0 from a page the arena does not hold
// and their writes to it are dropped (the page table, vm.ArenaTable, which
// the engines test at each access); user space's first access to a page
// gives it to the arena (the kernel's arena_vm_fault), or fails with
// BPF_F_SEGV_ON_FAULT (UserTouch). Freed pages are zeroed.
type ArenaMap struct {
	header
	spec  Spec
	mem   *vm.Mem
	base  uint64 // the window: offset 0, past the low guard
	table uint64 // the page table's byte of window page 0 (vm.ArenaTable)
	user  uint64 // the user address of the first page (user_vm_start)

	mu   sync.Mutex
	used []uint64 // a bit per page: allocated
}

func newArena(spec Spec) (Map, error) {
	if bits.UintSize < 64 {
		return nil, fmt.Errorf("map %s: arenas need a 64-bit host: %w", spec.Name, ErrNotSupported)
	}
	// The page table, then the window and its guards.
	window := uint64(vm.ArenaTableSize + arenaWindow + 2*ArenaGuard)
	mem, err := vm.Reserve(int(window)) // 64-bit int here
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	base := mem.Addr() + vm.ArenaTableSize + ArenaGuard
	a := &ArenaMap{spec: spec, mem: mem, base: base, table: vm.ArenaTableAt(base), user: spec.MapExtra}
	if a.user == 0 {
		// No address asked for: the one user space would get from
		// mmap, page aligned, its low half 0 (bpfvm's user view is the
		// window itself).
		a.user = 1 << 32
	}
	a.used = make([]uint64, (spec.MaxEntries+63)/64)
	if err := a.header.init(a); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	return a, nil
}

// Spec returns the spec the arena was created with.
func (a *ArenaMap) Spec() Spec { return a.spec }

// Base is the address of offset 0 of the window, what an arena pointer's
// low 32 bits count from.
func (a *ArenaMap) Base() uint64 { return a.base }

// UserStart is the user address of the arena's first page (the kernel's
// user_vm_start): map_extra, or bpfvm's own choice without one.
func (a *ArenaMap) UserStart() uint64 { return a.user }

// UserView is the arena's pages as user space maps them.
func (a *ArenaMap) UserView() vm.Region {
	start := a.base + uint64(uint32(a.user))
	return vm.Region{Start: start, End: start + uint64(a.spec.MaxEntries)*ArenaPage, Writable: true}
}

// Memory is the whole window and its guards: programs may access any of
// it, as arena accesses cannot fault in bpfvm.
func (a *ArenaMap) Memory() []vm.Region {
	return []vm.Region{{Start: a.base - ArenaGuard, End: a.base + arenaWindow + ArenaGuard, Writable: true}}
}

// pages is the number of pages.
func (a *ArenaMap) pages() uint64 { return uint64(a.spec.MaxEntries) }

// firstOff is the window offset of the first page.
func (a *ArenaMap) firstOff() uint64 { return uint64(uint32(a.user)) }

// isFree reports whether pages [p, p+n) are all free.
func (a *ArenaMap) isFree(p, n uint64) bool {
	for i := p; i < p+n; i++ {
		if a.used[i/64]&(1<<(i%64)) != 0 {
			return false
		}
	}
	return true
}

// mark sets or clears the pages [p, p+n), in the allocator's bits and
// the engines' page table.
func (a *ArenaMap) mark(p, n uint64, used bool) {
	var b uint8
	if used {
		b = 1
	}
	for i := p; i < p+n; i++ {
		if used {
			a.used[i/64] |= 1 << (i % 64)
		} else {
			a.used[i/64] &^= 1 << (i % 64)
		}
		*(*uint8)(vm.Ptr(a.table + (a.firstOff()>>vm.ArenaPageShift + i))) = b
	}
}

// UserTouch is user space's access to n bytes at offset off of the user
// view (UserView): each page not yet the arena's becomes one, zeroed, as
// the kernel's fault handler of the arena's mapping gives it a page; with
// BPF_F_SEGV_ON_FAULT the access fails instead (the kernel's SIGSEGV).
func (a *ArenaMap) UserTouch(off, n uint64) error {
	if n == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for p := off / ArenaPage; p <= (off+n-1)/ArenaPage && p < a.pages(); p++ {
		if !a.isFree(p, 1) {
			continue
		}
		if a.spec.Flags&FlagSegvOnFault != 0 {
			return fmt.Errorf("arena page %d not allocated (BPF_F_SEGV_ON_FAULT): %w", p, ErrFault)
		}
		clear(vm.Slice(a.base+a.firstOff()+p*ArenaPage, ArenaPage))
		a.mark(p, 1, true)
	}
	return nil
}

// AllocPages is bpf_arena_alloc_pages(arena, addr, n, node, flags): n
// zeroed pages at the user address addr (page aligned, 0: the first free
// run of n pages), and their user address, or 0 when they cannot be had,
// as the kernel's arena_alloc_pages.
func (a *ArenaMap) AllocPages(addr uint64, n uint32, node int32, flags uint64) uint64 {
	if flags != 0 || node < -1 || node > 0 || n == 0 || uint64(n) > a.pages() {
		return 0
	}
	cnt := uint64(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	var p uint64
	if addr != 0 {
		if addr%ArenaPage != 0 {
			return 0
		}
		p = uint64(uint32(addr)-uint32(a.user)) / ArenaPage
		if p > a.pages()-cnt || !a.isFree(p, cnt) {
			return 0
		}
	} else {
		found := false
		for q := uint64(0); q+cnt <= a.pages(); q++ {
			if a.isFree(q, cnt) {
				p, found = q, true
				break
			}
		}
		if !found {
			return 0
		}
	}
	off := a.firstOff() + p*ArenaPage
	clear(vm.Slice(a.base+off, cnt*ArenaPage))
	a.mark(p, cnt, true)
	return a.user&^0xffff_ffff | off
}

// FreePages is bpf_arena_free_pages(arena, addr, n): the pages from the
// one holding addr's low 32 bits on are freed (those past the arena's
// end ignored) and zeroed, as the kernel's arena_free_pages.
func (a *ArenaMap) FreePages(addr uint64, n uint32) {
	if n == 0 || addr == 0 {
		return
	}
	lo := uint64(uint32(addr)) &^ (ArenaPage - 1)
	full := a.user&^0xffff_ffff + lo
	end := a.user + a.pages()*ArenaPage
	if full >= end || full < a.user {
		return
	}
	cnt := min(uint64(n), (end-full)/ArenaPage)
	p := (lo - a.firstOff()) / ArenaPage
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mark(p, cnt, false)
	clear(vm.Slice(a.base+lo, cnt*ArenaPage))
}

// Lookup gives programs nothing: arenas have no keys.
func (a *ArenaMap) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update is not supported, as in the kernel.
func (a *ArenaMap) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of an arena: %w", ErrNotSupported)
}

// Delete is not supported, as in the kernel.
func (a *ArenaMap) Delete(unsafe.Pointer) error {
	return fmt.Errorf("delete from an arena: %w", ErrNotSupported)
}

// LookupBytes is not supported: use the memory.
func (a *ArenaMap) LookupBytes(key, value []byte) error {
	return fmt.Errorf("lookup in an arena: %w", ErrNotSupported)
}

// UpdateBytes is not supported, as in the kernel.
func (a *ArenaMap) UpdateBytes(key, value []byte, flags uint64) error {
	return fmt.Errorf("update of an arena: %w", ErrNotSupported)
}

// LookupAndDelete is not supported, as in the kernel.
func (a *ArenaMap) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in an arena: %w", ErrNotSupported)
}

// NextKey is not supported, as in the kernel.
func (a *ArenaMap) NextKey(key, next []byte) error {
	return fmt.Errorf("next key of an arena: %w", ErrNotSupported)
}

// Close drops the creator's reference.
func (a *ArenaMap) Close() error { return a.header.Close() }

// free unmaps the window: nothing holds the arena any more.
func (a *ArenaMap) free() error {
	err := a.mem.Free()
	a.mem = nil
	return err
}
