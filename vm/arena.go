package vm

// An arena (maps.ArenaMap) is a 4 GiB window with a guard on each side
// and, below the low guard, a page table: a byte per page of the window
// and its guards, non-zero for a page bpf_arena_alloc_pages (or a fault
// of user space) gave the arena. Arena accesses (isa.ModeArena) read 0
// from a page the table does not hold and drop their writes, as the
// kernel's BPF_PROBE_MEM32 accesses do through its fault handler.
const (
	// ArenaGuard is the guard on each side of the window: an access
	// adds the instruction's 16-bit offset to a 32-bit arena offset, so
	// it lands at most 32 KiB outside.
	ArenaGuard = 1 << 16
	// ArenaWindow is the span a 32-bit arena offset addresses.
	ArenaWindow = 1 << 32
	// ArenaPageShift is the log2 of the arena's page size.
	ArenaPageShift = 12
	// ArenaTableSize is the page table's size: a byte per page of the
	// window, and a page more for the guards' 2*16 bytes.
	ArenaTableSize = ArenaWindow>>ArenaPageShift + 1<<ArenaPageShift
	// ArenaTable is where the table's byte of the page holding window
	// offset 0 is, relative to the window's base (Env.Arena): the byte
	// of the page holding the signed window offset w is at
	// Arena + ArenaTable + w>>ArenaPageShift.
	ArenaTable = -(ArenaGuard + ArenaTableSize) + ArenaGuard>>ArenaPageShift
)

// arenaTable is ArenaTable as an unsigned displacement.
var arenaTable = func() uint64 { d := int64(ArenaTable); return uint64(d) }()

// ArenaTableAt returns the address of the page table's byte of window page
// 0 of the arena whose window starts at base.
func ArenaTableAt(base uint64) uint64 { return base + arenaTable }

// ArenaMapped reports whether the size bytes at signed window offset w of
// the arena whose window starts at base lie in pages it holds (the first
// and the last byte's: an access spans two pages at most).
func ArenaMapped(base uint64, w int64, size uint64) bool {
	t := base + arenaTable
	return *(*uint8)(Ptr(t + uint64(w>>ArenaPageShift))) != 0 &&
		*(*uint8)(Ptr(t + uint64((w+int64(size)-1)>>ArenaPageShift))) != 0
}
