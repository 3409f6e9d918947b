package helper

import (
	"sync"

	"github.com/bpfvm/bpfvm/maps"
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
	kind kobjKind
	refs int64
	// id is the object's identity in the world (a cgroup's id).
	id uint64
}

// kobjKind is the kernel type of an object.
type kobjKind uint8

const (
	kobjCpumask kobjKind = iota + 1
	kobjCgroup
)

var kobjs = kobjTable{objs: map[uint64]*kobj{}}

// newKobj allocates a zeroed object of size bytes with one reference and
// returns its address, 0 when memory is short (the kernel's allocation
// failing).
func newKobj(kind kobjKind, size int, id uint64) uint64 {
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

// bytes returns the object's memory.
func (o *kobj) bytes(addr uint64) []byte { return vm.Slice(addr, kobjSize) }

// lookupKobj returns the live object of kind at addr, or nil.
func lookupKobj(addr uint64, kind kobjKind) *kobj {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	o := kobjs.objs[addr]
	if o == nil || o.kind != kind || o.refs <= 0 {
		return nil
	}
	return o
}

// getKobj takes a reference to the object at addr (refcount_inc_not_zero):
// false for an object that is not of the table.
func getKobj(addr uint64) bool {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	o := kobjs.objs[addr]
	if o == nil || o.refs <= 0 {
		return false
	}
	o.refs++
	return true
}

// putKobj drops a reference to the object at addr; the last one frees it
// once no run can see it any more.
func putKobj(addr uint64) {
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
		maps.Defer(func() {
			kobjs.mu.Lock()
			delete(kobjs.objs, addr)
			kobjs.free = append(kobjs.free, addr)
			kobjs.mu.Unlock()
		})
	}
}

// ReleaseKptr drops the reference a map's referenced kptr field held to
// the object at addr, of BTF struct type typ, as the kernel's destructor
// kfuncs (bpf_task_release_dtor, bpf_cgroup_release_dtor,
// bpf_cpumask_release_dtor) do when an element holding it goes.
func ReleaseKptr(typ string, addr uint64) {
	if addr != 0 {
		putKobj(addr)
	}
}

// liveKobjs counts the objects alive, for tests.
func liveKobjs() int {
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
