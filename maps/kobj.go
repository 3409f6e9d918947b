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
	// free are the slots of slabs no object uses; slabs are never
	// unmapped, as the kernel's bpf_mem_alloc caches keep their pages.
	free  []uint64
	slabs []*vm.Mem
}

// Objects are kobjSize-byte slots of kobjSlab-byte slabs.
const (
	kobjSize = 64
	kobjSlab = 64 << 10
)

// kobj is one object.
type kobj struct {
	kind ObjectKind
	refs int64
	// id is the object's identity in the world (a cgroup's id).
	id uint64
}

// ObjectKind is the kernel type of an object of the table.
type ObjectKind uint8

// Object kinds.
const (
	ObjCpumask ObjectKind = iota + 1 // struct bpf_cpumask
	ObjCgroup                        // struct cgroup
)

var kobjs = kobjTable{objs: map[uint64]*kobj{}}

// NewObject allocates a zeroed object of size bytes with one reference and
// returns its address, 0 when memory is short (the kernel's allocation
// failing).
func NewObject(kind ObjectKind, size int, id uint64) uint64 {
	if size > kobjSize {
		return 0
	}
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	if len(kobjs.free) == 0 {
		m, err := vm.Alloc(kobjSlab)
		if err != nil {
			return 0
		}
		kobjs.slabs = append(kobjs.slabs, m)
		for off := uint64(0); off < kobjSlab; off += kobjSize {
			kobjs.free = append(kobjs.free, m.Addr()+off)
		}
	}
	addr := kobjs.free[len(kobjs.free)-1]
	kobjs.free = kobjs.free[:len(kobjs.free)-1]
	clear(vm.Slice(addr, kobjSize))
	kobjs.objs[addr] = &kobj{kind: kind, refs: 1, id: id}
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
	if last {
		Defer(func() {
			kobjs.mu.Lock()
			delete(kobjs.objs, addr)
			kobjs.free = append(kobjs.free, addr)
			kobjs.mu.Unlock()
		})
	}
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

// freeKptrs drops the references the referenced kptr fields of the value
// at b hold and clears them, as the kernel's bpf_obj_free_fields does with
// the fields' destructor kfuncs (bpf_task_release_dtor,
// bpf_cgroup_release_dtor, bpf_cpumask_release_dtor) when a value is
// overwritten or its element or map goes. A task is the world's: its
// reference is nothing to drop.
func freeKptrs(b uint64, fields []Field) {
	for _, f := range fields {
		if f.Kind != Kptr {
			continue
		}
		old := atomic.SwapUint64((*uint64)(vm.Ptr(b+uint64(f.Offset))), 0)
		if old != 0 {
			PutObject(old)
		}
	}
}

// hasKptr reports whether the fields hold a referenced kptr.
func hasKptr(fields []Field) bool {
	return slices.ContainsFunc(fields, func(f Field) bool { return f.Kind == Kptr })
}
