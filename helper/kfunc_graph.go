package helper

import (
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// graphKfuncs are allocated objects and the lists and rbtrees that own
// them (kernel/bpf/helpers.c's generic set). The verifier checks every
// call (verifier/graph.go): the roots' locks held, owning and non-owning
// references, the nodes' types; at run time the objects live in the
// kernel-object table (maps.NewAlloc) and the roots and nodes hold the
// kernel's links (maps/graph.go, maps/rbtree.go).
//
// The verified program's rewrite (rewrite.GraphArgs) passes what the
// kernel's fixup_kfunc_call passes: bpf_obj_new_impl's R1 becomes the
// handle of the object's type (maps.RegisterObjType), the push and add
// calls' last argument the node's offset in its object.
var graphKfuncs = []Kfunc{
	{Name: "bpf_obj_new_impl", Decl: "void *bpf_obj_new_impl(u64 local_type_id__k, void *meta__ign)", Flags: KfAcquire | KfRetNull, Hooks: HooksGeneric, Func: kfuncObjNew},
	{Name: "bpf_obj_drop_impl", Decl: "void bpf_obj_drop_impl(void *p__alloc, void *meta__ign)", Flags: KfRelease, Hooks: HooksGeneric, Func: kfuncObjDrop},
	{Name: "bpf_refcount_acquire_impl", Decl: "void *bpf_refcount_acquire_impl(void *p__refcounted_kptr, void *meta__ign)", Flags: KfAcquire | KfRetNull | KfRCU, Hooks: HooksGeneric, Func: kfuncRefcountAcquire},
	{Name: "bpf_list_push_front_impl", Decl: "int bpf_list_push_front_impl(struct bpf_list_head *head, struct bpf_list_node *node, void *meta__ign, u64 off)", Hooks: HooksGeneric, Func: kfuncListPushFront},
	{Name: "bpf_list_push_back_impl", Decl: "int bpf_list_push_back_impl(struct bpf_list_head *head, struct bpf_list_node *node, void *meta__ign, u64 off)", Hooks: HooksGeneric, Func: kfuncListPushBack},
	{Name: "bpf_list_pop_front", Decl: "struct bpf_list_node *bpf_list_pop_front(struct bpf_list_head *head)", Flags: KfAcquire | KfRetNull, Hooks: HooksGeneric, Func: kfuncListPopFront},
	{Name: "bpf_list_pop_back", Decl: "struct bpf_list_node *bpf_list_pop_back(struct bpf_list_head *head)", Flags: KfAcquire | KfRetNull, Hooks: HooksGeneric, Func: kfuncListPopBack},
	{Name: "bpf_list_front", Decl: "struct bpf_list_node *bpf_list_front(struct bpf_list_head *head)", Flags: KfRetNull, Hooks: HooksGeneric, Func: kfuncListFront},
	{Name: "bpf_list_back", Decl: "struct bpf_list_node *bpf_list_back(struct bpf_list_head *head)", Flags: KfRetNull, Hooks: HooksGeneric, Func: kfuncListBack},
	{Name: "bpf_rbtree_add_impl", Decl: "int bpf_rbtree_add_impl(struct bpf_rb_root *root, struct bpf_rb_node *node, void *less, void *meta__ign, u64 off)", Hooks: HooksGeneric, Func: kfuncRbtreeAdd},
	{Name: "bpf_rbtree_remove", Decl: "struct bpf_rb_node *bpf_rbtree_remove(struct bpf_rb_root *root, struct bpf_rb_node *node)", Flags: KfAcquire | KfRetNull, Hooks: HooksGeneric, Func: kfuncRbtreeRemove},
	{Name: "bpf_rbtree_first", Decl: "struct bpf_rb_node *bpf_rbtree_first(struct bpf_rb_root *root)", Flags: KfRetNull, Hooks: HooksGeneric, Func: kfuncRbtreeFirst},
	{Name: "bpf_rbtree_root", Decl: "struct bpf_rb_node *bpf_rbtree_root(struct bpf_rb_root *root)", Flags: KfRetNull, Hooks: HooksGeneric, Func: kfuncRbtreeRoot},
	{Name: "bpf_rbtree_left", Decl: "struct bpf_rb_node *bpf_rbtree_left(struct bpf_rb_root *root, struct bpf_rb_node *node)", Flags: KfRetNull, Hooks: HooksGeneric, Func: kfuncRbtreeLeft},
	{Name: "bpf_rbtree_right", Decl: "struct bpf_rb_node *bpf_rbtree_right(struct bpf_rb_root *root, struct bpf_rb_node *node)", Flags: KfRetNull, Hooks: HooksGeneric, Func: kfuncRbtreeRight},
}

// grantAlloc lets a checked run access the allocated object at addr (and
// the rest of its slab: the verifier bounds accesses to the object), and
// returns addr.
func grantAlloc(e *vm.Env, addr uint64) uint64 {
	if addr != 0 && e.Checked {
		if reg, ok := maps.AllocSlab(addr); ok {
			runner.Of(e).GrantRegion(e, reg)
		}
	}
	return addr
}

// kfuncObjNew is bpf_obj_new_impl(type, meta): a zeroed object of the type
// the rewrite's handle names, NULL when memory is short.
func kfuncObjNew(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.NewAlloc(r1)), nil
}

// kfuncObjDrop is bpf_obj_drop_impl(p, meta): the program's reference to
// the object goes, and with the last one the object and what it owns.
func kfuncObjDrop(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	maps.DropAlloc(r1)
	return 0, nil
}

// kfuncRefcountAcquire is bpf_refcount_acquire_impl(p, meta): a new
// reference to a refcounted object, NULL when it has none left.
func kfuncRefcountAcquire(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	if !maps.AcquireAlloc(r1) {
		return 0, nil
	}
	return grantAlloc(e, r1), nil
}

func kfuncListPushFront(_ *vm.Env, r1, r2, _, r4, _ uint64) (uint64, error) {
	return uint64(maps.ListPush(r1, r2, r4, false)), nil
}

func kfuncListPushBack(_ *vm.Env, r1, r2, _, r4, _ uint64) (uint64, error) {
	return uint64(maps.ListPush(r1, r2, r4, true)), nil
}

func kfuncListPopFront(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.ListPop(r1, false)), nil
}

func kfuncListPopBack(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.ListPop(r1, true)), nil
}

func kfuncListFront(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.ListPeek(r1, false)), nil
}

func kfuncListBack(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.ListPeek(r1, true)), nil
}

// kfuncRbtreeAdd is bpf_rbtree_add_impl(root, node, less, meta, off): the
// node goes into the tree where the program's less callback puts it,
// called as less(node, other) for each node on the way down.
func kfuncRbtreeAdd(e *vm.Env, r1, r2, r3, _, r5 uint64) (uint64, error) {
	r := runner.Of(e)
	var frames vm.Region
	entered := false
	less := func(a, b uint64) (bool, error) {
		if !entered {
			// Only a tree with nodes calls less.
			frames, entered = r.EnterCallbacks(e, vm.Region{}), true
		}
		grantAlloc(e, b)
		ret, err := r.Callback(e, r3, a, b, 0, 0, 0)
		return ret&1 != 0, err
	}
	ret, err := maps.RBAdd(r1, r2, r5, less)
	if entered {
		r.LeaveCallbacks(e, frames, vm.Region{})
	}
	return uint64(ret), err
}

func kfuncRbtreeRemove(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.RBRemove(r1, r2)), nil
}

func kfuncRbtreeFirst(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.RBFirst(r1)), nil
}

func kfuncRbtreeRoot(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.RBRootNode(r1)), nil
}

func kfuncRbtreeLeft(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.RBChild(r1, r2, false)), nil
}

func kfuncRbtreeRight(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return grantAlloc(e, maps.RBChild(r1, r2, true)), nil
}
