//go:build ignore

// graph_fail.c: tc programs that misuse allocated objects, lists and
// rbtrees, each refused by the kernel's verifier (the shapes of the
// kernel's linked_list_fail, rbtree_fail and refcounted_kptr_fail
// selftests, written anew for bpfvm); those named ok_* load. graph_test.go
// loads each alone and compares the verdict and the error with the
// kernel's.
#include "graph.h"

struct lelem {
	long val;
	struct bpf_list_node node;
};

struct relem {
	long key;
	struct bpf_rb_node node;
};

struct aval {
	struct bpf_spin_lock lock;
	struct bpf_list_head head __contains(lelem, node);
	struct lelem *anchor;
};

struct bval {
	struct bpf_spin_lock lock;
	struct bpf_rb_root root __contains(relem, node);
	struct relem *anchor;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct aval);
} amap SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bval);
} bmap SEC(".maps");

static __u32 zero;

#define GET(m) ({ void *__v = bpf_map_lookup_elem(&m, &zero); if (!__v) return 0; __v; })

static bool bad_less(struct bpf_rb_node *a, const struct bpf_rb_node *b)
{
	return container_of(a, struct relem, node)->key + 2;
}

SEC("tc")
int push_no_lock(void *ctx)
{
	struct aval *a = GET(amap);
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return 0;
	bpf_list_push_front(&a->head, &n->node);
	return 0;
}

SEC("tc")
int push_wrong_lock(void *ctx)
{
	struct aval *a = GET(amap);
	struct bval *b = GET(bmap);
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return 0;
	bpf_spin_lock(&b->lock);
	bpf_list_push_front(&a->head, &n->node);
	bpf_spin_unlock(&b->lock);
	return 0;
}

SEC("tc")
int pop_unchecked(void *ctx)
{
	struct aval *a = GET(amap);
	struct bpf_list_node *l;
	struct lelem *n;

	bpf_spin_lock(&a->lock);
	l = bpf_list_pop_front(&a->head);
	bpf_spin_unlock(&a->lock);
	n = container_of(l, struct lelem, node);
	return n->val;
}

SEC("tc")
int pop_leak(void *ctx)
{
	struct aval *a = GET(amap);
	struct bpf_list_node *l;

	bpf_spin_lock(&a->lock);
	l = bpf_list_pop_front(&a->head);
	bpf_spin_unlock(&a->lock);
	return l != 0;
}

SEC("tc")
int use_after_unlock(void *ctx)
{
	struct aval *a = GET(amap);
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return 0;
	bpf_spin_lock(&a->lock);
	bpf_list_push_front(&a->head, &n->node);
	bpf_spin_unlock(&a->lock);
	return n->val;
}

SEC("tc")
int use_after_drop(void *ctx)
{
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return 0;
	bpf_obj_drop(n);
	return n->val;
}

SEC("tc")
int push_twice(void *ctx)
{
	struct aval *a = GET(amap);
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return 0;
	bpf_spin_lock(&a->lock);
	bpf_list_push_front(&a->head, &n->node);
	bpf_list_push_back(&a->head, &n->node);
	bpf_spin_unlock(&a->lock);
	return 0;
}

/* Not a failure since 6.16: bpf_rbtree_remove takes an owning reference
 * too (a refcounted object another reference keeps in the tree); this
 * one is in no tree, so the call returns NULL. */
SEC("tc")
int ok_remove_owning(void *ctx)
{
	struct bval *b = GET(bmap);
	struct relem *n = bpf_obj_new(struct relem);
	struct bpf_rb_node *rb;

	if (!n)
		return 0;
	bpf_spin_lock(&b->lock);
	rb = bpf_rbtree_remove(&b->root, &n->node);
	bpf_spin_unlock(&b->lock);
	bpf_obj_drop(n);
	if (rb)
		bpf_obj_drop(container_of(rb, struct relem, node));
	return 0;
}

SEC("tc")
int drop_in_lock(void *ctx)
{
	struct aval *a = GET(amap);
	struct bpf_list_node *l;

	bpf_spin_lock(&a->lock);
	l = bpf_list_pop_front(&a->head);
	if (l)
		bpf_obj_drop(container_of(l, struct lelem, node));
	bpf_spin_unlock(&a->lock);
	return 0;
}

SEC("tc")
int node_access(void *ctx)
{
	struct lelem *n = bpf_obj_new(struct lelem);
	long v;

	if (!n)
		return 0;
	v = n->node.__opaque[1];
	bpf_obj_drop(n);
	return v;
}

SEC("tc")
int acquire_plain(void *ctx)
{
	struct lelem *n = bpf_obj_new(struct lelem), *m;

	if (!n)
		return 0;
	m = bpf_refcount_acquire(n);
	if (m)
		bpf_obj_drop(m);
	bpf_obj_drop(n);
	return 0;
}

SEC("tc")
int push_wrong_type(void *ctx)
{
	struct aval *a = GET(amap);
	struct relem *n = bpf_obj_new(struct relem);

	if (!n)
		return 0;
	bpf_spin_lock(&a->lock);
	bpf_list_push_front(&a->head, (struct bpf_list_node *)&n->node);
	bpf_spin_unlock(&a->lock);
	return 0;
}

SEC("tc")
int new_unchecked(void *ctx)
{
	struct lelem *n = bpf_obj_new(struct lelem);

	n->val = 1;
	bpf_obj_drop(n);
	return 0;
}

SEC("tc")
int push_unchecked(void *ctx)
{
	struct aval *a = GET(amap);
	struct lelem *n = bpf_obj_new(struct lelem);

	bpf_spin_lock(&a->lock);
	bpf_list_push_front(&a->head, &n->node);
	bpf_spin_unlock(&a->lock);
	return 0;
}

SEC("tc")
int first_after_unlock(void *ctx)
{
	struct bval *b = GET(bmap);
	struct bpf_rb_node *rb;

	bpf_spin_lock(&b->lock);
	rb = bpf_rbtree_first(&b->root);
	bpf_spin_unlock(&b->lock);
	if (!rb)
		return 0;
	return container_of(rb, struct relem, node)->key;
}

/* Not a failure: the bool the callback returns is 0 or 1 whatever the
 * expression. */
SEC("tc")
int ok_less_bool(void *ctx)
{
	struct bval *b = GET(bmap);
	struct relem *n = bpf_obj_new(struct relem);

	if (!n)
		return 0;
	bpf_spin_lock(&b->lock);
	bpf_rbtree_add(&b->root, &n->node, bad_less);
	bpf_spin_unlock(&b->lock);
	return 0;
}

SEC("tc")
int exit_in_lock(void *ctx)
{
	struct aval *a = GET(amap);
	struct bpf_list_node *l;

	bpf_spin_lock(&a->lock);
	l = bpf_list_pop_front(&a->head);
	if (!l)
		return 1;
	bpf_spin_unlock(&a->lock);
	bpf_obj_drop(container_of(l, struct lelem, node));
	return 0;
}

SEC("tc")
int remove_after_drop_lock(void *ctx)
{
	struct bval *b = GET(bmap);
	struct bpf_rb_node *rb;

	bpf_spin_lock(&b->lock);
	rb = bpf_rbtree_first(&b->root);
	bpf_spin_unlock(&b->lock);
	if (!rb)
		return 0;
	bpf_spin_lock(&b->lock);
	rb = bpf_rbtree_remove(&b->root, rb);
	bpf_spin_unlock(&b->lock);
	if (rb)
		bpf_obj_drop(container_of(rb, struct relem, node));
	return 0;
}

SEC("tc")
int drop_twice(void *ctx)
{
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return 0;
	bpf_obj_drop(n);
	bpf_obj_drop(n);
	return 0;
}

SEC("tc")
int ok_control(void *ctx)
{
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return 0;
	bpf_obj_drop(n);
	return 0;
}

char _license[] SEC("license") = "GPL";
