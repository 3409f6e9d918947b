package maps

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bpfvm/bpfvm/vm"
)

// Kernel objects bpfvm allocates for kfuncs (cpumasks, the cgroups
// programs acquire): memory outside the Go heap, reference counted as the
// kernel's refcount_t, freed when the last reference goes, after the runs
// that may still see it (maps.Defer, as the kernel frees them after an RCU
// grace period).
//
// The table is process-wide, as the kernel's objects are: a reference
// stored in a map (bpf_kptr_xchg) outlives the run and the program that
// acquired it, and reaches runs of any program sharing the map. It also
// tells the kfuncs an object's address from any other value: a kfunc
// writes only objects of the table.
type kobjTable struct {
	mu sync.Mutex
	// chunks finds the slabs by the 64 KiB chunks of addresses they
	// cover (each at most two, a chunk at most two slabs).
	chunks map[uint64][2]*slab
	// free are the slots of slabs no object uses, by size class; slabs
	// are never unmapped, as the kernel's bpf_mem_alloc caches keep
	// their pages.
	free  [kobjClasses][]uint64
	slabs []*slab
}

// slab is kobjSlab bytes of slots of one size class, with each slot's
// object.
type slab struct {
	mem   *vm.Mem
	base  uint64
	shift uint8 // log2 of the slot size
	objs  []kobj
}

// Objects are slots of kobjSlab-byte slabs, of a size class from
// kobjMinSize to kobjMaxSize bytes (powers of two); kernel objects take
// kobjSize, allocated objects (bpf_obj_new) the class of their size.
const (
	kobjSize    = 64
	kobjMinSize = 16
	kobjMaxSize = 4096 // the kernel's bpf_mem_alloc's largest
	kobjClasses = 9
	kobjSlab    = 64 << 10
)

// kobj is one object: a slot of a slab. A free slot has kind 0.
type kobj struct {
	kind ObjectKind
	// class is the slot's size class.
	class uint8
	refs  int64
	// id is the object's identity in the world (a cgroup's id).
	id uint64
	// typ is an allocated object's type (ObjAlloc).
	typ *ObjType
}

// ObjectKind is the kernel type of an object of the table.
type ObjectKind uint8

// Object kinds.
const (
	ObjCpumask ObjectKind = iota + 1 // struct bpf_cpumask
	ObjCgroup                        // struct cgroup
	ObjAlloc                         // a program's type (bpf_obj_new)
)

var kobjs = kobjTable{chunks: map[uint64][2]*slab{}}

// lookup returns the object whose slot starts at addr, nil for a free
// slot or another address. The caller holds mu.
func (t *kobjTable) lookup(addr uint64) *kobj {
	for _, s := range t.chunks[addr>>16] {
		if s == nil || addr < s.base || addr >= s.base+kobjSlab {
			continue
		}
		off := addr - s.base
		if off&(1<<s.shift-1) != 0 {
			return nil
		}
		if o := &s.objs[off>>s.shift]; o.kind != 0 {
			return o
		}
		return nil
	}
	return nil
}

// slabOf returns the slab holding addr. The caller holds mu.
func (t *kobjTable) slabOf(addr uint64) *slab {
	for _, s := range t.chunks[addr>>16] {
		if s != nil && addr >= s.base && addr < s.base+kobjSlab {
			return s
		}
	}
	return nil
}

// NewObject allocates a zeroed object of size bytes with one reference and
// returns its address, 0 when memory is short (the kernel's allocation
// failing).
func NewObject(kind ObjectKind, size int, id uint64) uint64 {
	if size > kobjSize {
		return 0
	}
	return newSlot(kobj{kind: kind, refs: 1, id: id}, kobjSize)
}

// sizeClass is the class of slots for objects of size bytes, and their
// size's log2.
func sizeClass(size uint32) (uint8, uint8) {
	c, shift := uint8(0), uint8(4) // kobjMinSize
	for uint64(1)<<shift < uint64(size) {
		c++
		shift++
	}
	return c, shift
}

// newSlot takes a zeroed slot of at least size bytes for o, 0 when memory
// is short or size is past kobjMaxSize.
func newSlot(o kobj, size uint32) uint64 {
	if size > kobjMaxSize {
		return 0
	}
	c, shift := sizeClass(size)
	o.class = c
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	if len(kobjs.free[c]) == 0 {
		m, err := vm.Alloc(kobjSlab)
		if err != nil {
			return 0
		}
		s := &slab{mem: m, base: m.Addr(), shift: shift, objs: make([]kobj, kobjSlab>>shift)}
		kobjs.slabs = append(kobjs.slabs, s)
		for _, chunk := range []uint64{s.base >> 16, (s.base + kobjSlab - 1) >> 16} {
			e := kobjs.chunks[chunk]
			if e[0] == nil {
				e[0] = s
			} else if e[0] != s {
				e[1] = s
			}
			kobjs.chunks[chunk] = e
		}
		for off := uint64(kobjSlab); off > 0; off -= 1 << shift {
			kobjs.free[c] = append(kobjs.free[c], s.base+off-1<<shift)
		}
	}
	free := kobjs.free[c]
	addr := free[len(free)-1]
	kobjs.free[c] = free[:len(free)-1]
	clear(vm.Slice(addr, 1<<shift))
	s := kobjs.slabOf(addr)
	s.objs[(addr-s.base)>>shift] = o
	return addr
}

// LookupObject reports whether a live object of kind is at addr, and
// its id.
func LookupObject(addr uint64, kind ObjectKind) (id uint64, ok bool) {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	o := kobjs.lookup(addr)
	if o == nil || o.kind != kind || o.refs <= 0 {
		return 0, false
	}
	return o.id, true
}

// GetObject takes a reference to the object at addr (refcount_inc_not_zero):
// false for an object that is not of the table.
func GetObject(addr uint64) bool {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	o := kobjs.lookup(addr)
	if o == nil || o.refs <= 0 {
		return false
	}
	o.refs++
	return true
}

// PutObject drops a reference to the object at addr; the last one frees it
// once no run can see it any more.
func PutObject(addr uint64) {
	kobjs.mu.Lock()
	o := kobjs.lookup(addr)
	if o == nil || o.refs <= 0 {
		kobjs.mu.Unlock()
		return
	}
	o.refs--
	last := o.refs == 0
	typ := o.typ
	kobjs.mu.Unlock()
	if !last {
		return
	}
	if typ != nil {
		// What the object owns goes with it (bpf_obj_free_fields).
		freeFields(addr, typ.Fields)
		if !typ.refcounted {
			// Only its one owner could reach it, and that reference
			// is gone: the slot is free at once (the kernel's
			// bpf_mem_free; refcounted objects wait for
			// bpf_mem_free_rcu).
			kobjs.mu.Lock()
			freeSlot(o, addr)
			kobjs.mu.Unlock()
			return
		}
	}
	Defer(func() {
		kobjs.mu.Lock()
		freeSlot(o, addr)
		kobjs.mu.Unlock()
	})
}

// freeSlot returns the slot of o at addr. The caller holds mu.
func freeSlot(o *kobj, addr uint64) {
	c := o.class
	*o = kobj{}
	kobjs.free[c] = append(kobjs.free[c], addr)
}

// LiveObjects counts the objects alive (for tests: every reference
// dropped frees its object).
func LiveObjects() int {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	n := 0
	for _, s := range kobjs.slabs {
		for i := range s.objs {
			if s.objs[i].refs > 0 {
				n++
			}
		}
	}
	return n
}

// freeFields drops what the fields of the value (or allocated object) at b
// own and clears them, as the kernel's bpf_obj_free_fields does when a
// value is overwritten or its element or map goes, or an object is
// dropped: the references of referenced kptrs, with the fields'
// destructor kfuncs (bpf_task_release_dtor, bpf_cgroup_release_dtor,
// bpf_cpumask_release_dtor, bpf_obj_drop for allocated objects), and
// every node of a list or rbtree root (bpf_list_head_free,
// bpf_rb_root_free), taken out holding the value's spin lock. A task is
// the world's: its reference is nothing to drop.
func freeFields(b uint64, fields []Field) {
	var lock *uint32
	for _, f := range fields {
		if f.Kind == SpinLock {
			lock = (*uint32)(vm.Ptr(b + uint64(f.Offset)))
		}
	}
	for _, f := range fields {
		switch f.Kind {
		case Kptr:
			old := atomic.SwapUint64((*uint64)(vm.Ptr(b+uint64(f.Offset))), 0)
			if old != 0 {
				PutObject(old)
			}
		case ListHead:
			freeList(b+uint64(f.Offset), f.NodeOff, lock)
		case RBRoot:
			freeRBTree(b+uint64(f.Offset), f.NodeOff, lock)
		}
	}
}

// hasFreeFields reports whether the fields hold something a value owns: a
// referenced kptr or a graph root.
func hasFreeFields(fields []Field) bool {
	return slices.ContainsFunc(fields, func(f Field) bool { return f.Kind&(Kptr|ListHead|RBRoot) != 0 })
}
