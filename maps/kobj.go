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
	mu   sync.Mutex
	objs map[uint64]*kobj
	// free are the slots of slabs no object uses, by size class; slabs
	// are never unmapped, as the kernel's bpf_mem_alloc caches keep
	// their pages.
	free  [kobjClasses][]uint64
	slabs []*vm.Mem
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

// kobj is one object.
type kobj struct {
	kind ObjectKind
	refs int64
	// id is the object's identity in the world (a cgroup's id).
	id uint64
	// typ is an allocated object's type (ObjAlloc).
	typ *ObjType
	// class is the slot's size class.
	class uint8
}

// ObjectKind is the kernel type of an object of the table.
type ObjectKind uint8

// Object kinds.
const (
	ObjCpumask ObjectKind = iota + 1 // struct bpf_cpumask
	ObjCgroup                        // struct cgroup
	ObjAlloc                         // a program's type (bpf_obj_new)
)

var kobjs = kobjTable{objs: map[uint64]*kobj{}}

// NewObject allocates a zeroed object of size bytes with one reference and
// returns its address, 0 when memory is short (the kernel's allocation
// failing).
func NewObject(kind ObjectKind, size int, id uint64) uint64 {
	if size > kobjSize {
		return 0
	}
	return newSlot(&kobj{kind: kind, refs: 1, id: id}, kobjSize)
}

// sizeClass is the class of slots for objects of size bytes.
func sizeClass(size uint32) (uint8, uint64) {
	c, n := uint8(0), uint64(kobjMinSize)
	for n < uint64(size) {
		c++
		n <<= 1
	}
	return c, n
}

// newSlot takes a zeroed slot of at least size bytes for o, 0 when memory
// is short or size is past kobjMaxSize.
func newSlot(o *kobj, size uint32) uint64 {
	if size > kobjMaxSize {
		return 0
	}
	c, n := sizeClass(size)
	o.class = c
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	if len(kobjs.free[c]) == 0 {
		m, err := vm.Alloc(kobjSlab)
		if err != nil {
			return 0
		}
		kobjs.slabs = append(kobjs.slabs, m)
		for off := uint64(0); off < kobjSlab; off += n {
			kobjs.free[c] = append(kobjs.free[c], m.Addr()+off)
		}
	}
	free := kobjs.free[c]
	addr := free[len(free)-1]
	kobjs.free[c] = free[:len(free)-1]
	clear(vm.Slice(addr, n))
	kobjs.objs[addr] = o
	return addr
}

// LookupObject reports whether a live object of kind is at addr, and
// its id.
func LookupObject(addr uint64, kind ObjectKind) (id uint64, ok bool) {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	o := kobjs.objs[addr]
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
	o := kobjs.objs[addr]
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
	o := kobjs.objs[addr]
	if o == nil || o.refs <= 0 {
		kobjs.mu.Unlock()
		return
	}
	o.refs--
	last := o.refs == 0
	kobjs.mu.Unlock()
	if !last {
		return
	}
	if o.typ != nil {
		// What the object owns goes with it (bpf_obj_free_fields).
		freeFields(addr, o.typ.Fields)
	}
	Defer(func() {
		kobjs.mu.Lock()
		delete(kobjs.objs, addr)
		kobjs.free[o.class] = append(kobjs.free[o.class], addr)
		kobjs.mu.Unlock()
	})
}

// LiveObjects counts the objects alive (for tests: every reference
// dropped frees its object).
func LiveObjects() int {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	n := 0
	for _, o := range kobjs.objs {
		if o.refs > 0 {
			n++
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
