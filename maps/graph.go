package maps

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/bpfvm/bpfvm/vm"
)

// Allocated objects and their graphs: the objects programs allocate with
// bpf_obj_new (objects of the kernel-object table, of a program's own BTF
// type) and the lists and rbtrees that own them, as the kernel's
// kernel/bpf/helpers.c keeps them. Roots and nodes have the kernel's
// layouts, in the 16 (root) and 24 or 32 (node) opaque bytes of the uapi
// structs:
//
//	bpf_list_head: next, prev (a struct list_head; zero: empty, not yet
//	               initialised)
//	bpf_list_node: next, prev, owner (the head it is on, 0 when free)
//	bpf_rb_root:   root node, leftmost node (struct rb_root_cached)
//	bpf_rb_node:   parent | colour (bit 0 set: black), right, left, owner
//
// Every operation runs with the root's bpf_spin_lock held, which the
// verifier proves, so none takes a lock of its own; the owner field keeps
// a refcounted object from being in two places of one kind at once.

// ObjType is the type of allocated objects: their size and special fields
// (lists and rbtrees they hold, kptrs, their refcount), what bpf_obj_drop
// frees and bpf_refcount_acquire counts.
type ObjType struct {
	Size   uint32
	Fields []Field
	// refcounted says the type has a bpf_refcount.
	refcounted bool
}

// objTypes interns object types; a type's handle is objTypeTag plus its
// index, what a verified bpf_obj_new_impl call receives in R1 (the
// kernel's rewrite passes the size and the struct's btf_record).
var objTypes struct {
	mu    sync.Mutex
	types []*ObjType
	index map[string]uint64
}

// objTypeTag marks object type handles, so that a program that was not
// verified (its R1 the BTF type id the rewrite replaces) cannot name one.
const objTypeTag = 0x0b1ec7 << 32

// RegisterObjType returns the handle of the object type of size bytes with
// fields; equal types share one.
func RegisterObjType(size uint32, fields []Field) uint64 {
	var key strings.Builder
	fmt.Fprint(&key, size)
	for _, f := range fields {
		fmt.Fprintf(&key, ";%d:%d:%d:%d", f.Kind, f.Offset, f.Size, f.NodeOff)
	}
	objTypes.mu.Lock()
	defer objTypes.mu.Unlock()
	if h, ok := objTypes.index[key.String()]; ok {
		return h
	}
	if objTypes.index == nil {
		objTypes.index = map[string]uint64{}
	}
	rc := slices.ContainsFunc(fields, func(f Field) bool { return f.Kind == Refcount })
	objTypes.types = append(objTypes.types, &ObjType{Size: size, Fields: fields, refcounted: rc})
	h := objTypeTag | uint64(len(objTypes.types)-1)
	objTypes.index[key.String()] = h
	return h
}

// objTypeOf returns the type a handle names, nil for another value.
func objTypeOf(h uint64) *ObjType {
	if h&^0xffffffff != objTypeTag {
		return nil
	}
	objTypes.mu.Lock()
	defer objTypes.mu.Unlock()
	if i := h & 0xffffffff; i < uint64(len(objTypes.types)) {
		return objTypes.types[i]
	}
	return nil
}

// NewAlloc allocates a zeroed object of the type handle h names
// (bpf_obj_new): its refcount, if any, one. It returns 0 when memory is
// short, the object is too large for the kernel's allocator, or h names no
// type.
func NewAlloc(h uint64) uint64 {
	t := objTypeOf(h)
	if t == nil {
		return 0
	}
	return newSlot(kobj{kind: ObjAlloc, refs: 1, typ: t}, max(t.Size, 1))
}

// AllocSlab returns the slab holding the allocated object at addr, the
// region checked runs grant for accesses through the object's pointer.
func AllocSlab(addr uint64) (vm.Region, bool) {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	if s := kobjs.slabOf(addr); s != nil {
		return vm.Region{Start: s.base, End: s.base + kobjSlab, Writable: true}, true
	}
	return vm.Region{}, false
}

// AcquireAlloc takes another reference to the refcounted object at addr
// (bpf_refcount_acquire: refcount_inc_not_zero), false when it has none
// left or is not an allocated object.
func AcquireAlloc(addr uint64) bool {
	kobjs.mu.Lock()
	defer kobjs.mu.Unlock()
	o := kobjs.lookup(addr)
	if o == nil || o.kind != ObjAlloc || o.refs <= 0 {
		return false
	}
	o.refs++
	return true
}

// DropAlloc drops a reference to the allocated object at addr
// (bpf_obj_drop): the last one frees what the object owns and then the
// object, once no run can see it.
func DropAlloc(addr uint64) { PutObject(addr) }

// gword is the 8 bytes at addr of a root or node.
func gword(addr uint64) *uint64 { return (*uint64)(vm.Ptr(addr)) }

// Offsets in list heads and nodes.
const (
	listNext  = 0
	listPrev  = 8
	listOwner = 16
)

// ListPush links the node at node (at nodeOff in its object) first or last
// in the list at head (bpf_list_push_front_impl, _back_impl): 0, or
// -EINVAL and the object's reference dropped when the node is on a list
// already (a refcounted object pushed twice).
func ListPush(head, node, nodeOff uint64, tail bool) int64 {
	if *gword(node + listOwner) != 0 {
		DropAlloc(node - nodeOff)
		return -22
	}
	if *gword(head + listNext) == 0 {
		*gword(head + listNext), *gword(head + listPrev) = head, head
	}
	prev, next := head, *gword(head + listNext)
	if tail {
		prev, next = *gword(head + listPrev), head
	}
	*gword(node + listNext), *gword(node + listPrev) = next, prev
	*gword(next + listPrev) = node
	*gword(prev + listNext) = node
	*gword(node + listOwner) = head
	return 0
}

// ListPeek returns the first or last node of the list at head, 0 when it
// is empty (bpf_list_front, bpf_list_back).
func ListPeek(head uint64, tail bool) uint64 {
	n := *gword(head + listNext)
	if tail {
		n = *gword(head + listPrev)
	}
	if n == head {
		return 0
	}
	return n
}

// ListPop unlinks the first or last node of the list at head and returns
// it, 0 when the list is empty (bpf_list_pop_front, _back).
func ListPop(head uint64, tail bool) uint64 {
	n := ListPeek(head, tail)
	if n != 0 {
		listUnlink(n)
	}
	return n
}

func listUnlink(n uint64) {
	next, prev := *gword(n + listNext), *gword(n + listPrev)
	*gword(prev + listNext) = next
	*gword(next + listPrev) = prev
	*gword(n + listNext), *gword(n + listPrev), *gword(n + listOwner) = 0, 0, 0
}

// freeList takes every node off the list at head, holding lock (when the
// value has one), and then drops their objects (bpf_list_head_free).
func freeList(head uint64, nodeOff uint32, lock *uint32) {
	if lock != nil {
		LockSpin(lock)
	}
	var nodes []uint64
	for n := ListPop(head, false); n != 0; n = ListPop(head, false) {
		nodes = append(nodes, n)
	}
	*gword(head + listNext), *gword(head + listPrev) = 0, 0
	if lock != nil {
		UnlockSpin(lock)
	}
	for _, n := range nodes {
		DropAlloc(n - uint64(nodeOff))
	}
}
