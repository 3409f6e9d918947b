//go:build ignore

// graph.c: tc programs using allocated objects (bpf_obj_new), linked lists,
// rbtrees and refcounted objects, in the shapes of the kernel's
// linked_list, rbtree and refcounted_kptr selftests (written anew for
// bpfvm). Each returns what its test checks.
#include "graph.h"

struct lelem {
	long val;
	struct bpf_list_node node;
};

struct relem {
	long key;
	long val;
	struct bpf_rb_node node;
};

struct rcelem {
	long key;
	struct bpf_rb_node rb;
	struct bpf_list_node list;
	struct bpf_refcount ref;
};

/* Each map's one value holds a lock, what it protects, and a pointer that
 * makes the contained struct part of the map's BTF, which cilium/ebpf
 * builds from the value type only (the kernel finds the contains: struct in
 * the map's BTF). A data section (libbpf's private(X) globals) would not
 * do: cilium/ebpf maps data sections, and values with special fields
 * cannot be mapped. */
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

struct cval {
	struct bpf_spin_lock lock;
	struct bpf_rb_root root __contains(rcelem, rb);
	struct bpf_list_head head __contains(rcelem, list);
	struct rcelem *anchor;
};

#define ONE(name, vtype) \
struct { \
	__uint(type, BPF_MAP_TYPE_ARRAY); \
	__uint(max_entries, 1); \
	__type(key, __u32); \
	__type(value, vtype); \
} name SEC(".maps")

ONE(amap, struct aval);
ONE(bmap, struct bval);
ONE(cmap, struct cval);

static __u32 zero;

#define GET(m) ({ void *__v = bpf_map_lookup_elem(&m, &zero); if (!__v) return -99; __v; })

struct mval {
	struct bpf_spin_lock lock;
	struct bpf_list_head head __contains(lelem, node);
	struct lelem *anchor;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct mval);
} lists SEC(".maps");

static bool less(struct bpf_rb_node *a, const struct bpf_rb_node *b)
{
	struct relem *x = container_of(a, struct relem, node);
	struct relem *y = container_of(b, struct relem, node);

	return x->key < y->key;
}

static bool rcless(struct bpf_rb_node *a, const struct bpf_rb_node *b)
{
	struct rcelem *x = container_of(a, struct rcelem, rb);
	struct rcelem *y = container_of(b, struct rcelem, rb);

	return x->key < y->key;
}

SEC("tc")
int obj_new_drop(struct __sk_buff *skb)
{
	struct lelem *n = bpf_obj_new(struct lelem);
	long v;

	if (!n)
		return 1;
	n->val = 41;
	n->val++;
	v = n->val;
	bpf_obj_drop(n);
	return v;
}

static long push(struct bpf_list_head *head, struct bpf_spin_lock *lock, long val, bool front)
{
	struct lelem *n = bpf_obj_new(struct lelem);

	if (!n)
		return -1;
	n->val = val;
	bpf_spin_lock(lock);
	if (front)
		bpf_list_push_front(head, &n->node);
	else
		bpf_list_push_back(head, &n->node);
	bpf_spin_unlock(lock);
	return 0;
}

static long pop(struct bpf_list_head *head, struct bpf_spin_lock *lock, bool front)
{
	struct bpf_list_node *l;
	struct lelem *n;
	long v;

	bpf_spin_lock(lock);
	l = front ? bpf_list_pop_front(head) : bpf_list_pop_back(head);
	bpf_spin_unlock(lock);
	if (!l)
		return -1;
	n = container_of(l, struct lelem, node);
	v = n->val;
	bpf_obj_drop(n);
	return v;
}

/* 3 1 2 in the list: pop front 3, back 2, peek front 1, pop 1, then empty. */
SEC("tc")
int list_order(struct __sk_buff *skb)
{
	struct bpf_list_node *l;
	long r = 0, v;

	struct aval *a = GET(amap);

	if (push(&a->head, &a->lock, 1, false) || push(&a->head, &a->lock, 2, false) || push(&a->head, &a->lock, 3, true))
		return -1;
	r = pop(&a->head, &a->lock, true) * 1000;
	r += pop(&a->head, &a->lock, false) * 100;
	bpf_spin_lock(&a->lock);
	l = bpf_list_front(&a->head);
	v = l ? container_of(l, struct lelem, node)->val : -1;
	l = bpf_list_back(&a->head);
	if (l)
		v += container_of(l, struct lelem, node)->val * 10;
	bpf_spin_unlock(&a->lock);
	r += v;
	r += pop(&a->head, &a->lock, true) * 100000;
	r += pop(&a->head, &a->lock, true) * 1000000; /* empty: -1 */
	return r;
}

/* Left in the list for the next run (and the map's destructor). */
SEC("tc")
int list_add(struct __sk_buff *skb)
{
	struct aval *a = GET(amap);

	return push(&a->head, &a->lock, skb->len, false);
}

SEC("tc")
int list_sum(struct __sk_buff *skb)
{
	struct aval *a = GET(amap);
	long sum = 0, n = 0;

	for (int i = 0; i < 16; i++) {
		long v = pop(&a->head, &a->lock, true);

		if (v < 0)
			break;
		sum += v;
		n++;
	}
	return sum * 100 + n;
}

static long radd(struct bval *b, long key, long val)
{
	struct relem *n = bpf_obj_new(struct relem);

	if (!n)
		return -1;
	n->key = key;
	n->val = val;
	bpf_spin_lock(&b->lock);
	bpf_rbtree_add(&b->root, &n->node, less);
	bpf_spin_unlock(&b->lock);
	return 0;
}

/* Remove the smallest key, return its value (-1: empty). */
static long rpop(struct bval *b)
{
	struct bpf_rb_node *rb;
	struct relem *n;
	long v;

	bpf_spin_lock(&b->lock);
	rb = bpf_rbtree_first(&b->root);
	if (!rb) {
		bpf_spin_unlock(&b->lock);
		return -1;
	}
	rb = bpf_rbtree_remove(&b->root, rb);
	bpf_spin_unlock(&b->lock);
	if (!rb)
		return -2;
	n = container_of(rb, struct relem, node);
	v = n->val;
	bpf_obj_drop(n);
	return v;
}

SEC("tc")
int rbtree_order(struct __sk_buff *skb)
{
	struct bval *b = GET(bmap);
	long keys[] = {5, 3, 8, 1, 9, 2};
	long r = 0;

	for (int i = 0; i < 6; i++)
		if (radd(b, keys[i], i + 1))
			return -1;
	/* values in key order: 4 6 2 1 3 5 */
	for (int i = 0; i < 7; i++) {
		long v = rpop(b);

		if (v < 0)
			return r * 10 + 9;
		r = r * 10 + v;
	}
	return r;
}

/* The root, its children and a leftmost walk by bpf_rbtree_left. */
SEC("tc")
int rbtree_walk(struct __sk_buff *skb)
{
	struct bval *b = GET(bmap);
	struct bpf_rb_node *rb, *l, *r;
	long res = 0, depth = 0;

	for (int i = 1; i <= 7; i++)
		if (radd(b, i * 10, i))
			return -1;
	bpf_spin_lock(&b->lock);
	rb = bpf_rbtree_root(&b->root);
	if (!rb) {
		bpf_spin_unlock(&b->lock);
		return -2;
	}
	res = container_of(rb, struct relem, node)->key;
	l = bpf_rbtree_left(&b->root, rb);
	r = bpf_rbtree_right(&b->root, rb);
	if (l)
		res = res * 100 + container_of(l, struct relem, node)->key;
	if (r)
		res = res * 100 + container_of(r, struct relem, node)->key;
	for (int i = 0; i < 8 && rb; i++) {
		rb = bpf_rbtree_left(&b->root, rb);
		if (rb)
			depth++;
	}
	bpf_spin_unlock(&b->lock);
	for (int i = 0; i < 8; i++)
		if (rpop(b) < 0)
			break;
	return res * 10 + depth;
}

/* 40 keys from a linear congruential sequence, then 30 removals of the
 * root: the hash of the roots seen follows the tree's shape, which
 * rebalancing decides. */
SEC("tc")
int rbtree_mix(struct __sk_buff *skb)
{
	struct bval *b = GET(bmap);
	__u64 x = skb->len, h = 0;

	for (int i = 0; i < 40; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if (radd(b, (x >> 33) % 1000, i))
			return -1;
	}
	for (int i = 0; i < 30; i++) {
		struct bpf_rb_node *rb;
		struct relem *n;

		bpf_spin_lock(&b->lock);
		rb = bpf_rbtree_root(&b->root);
		if (!rb) {
			bpf_spin_unlock(&b->lock);
			return -2;
		}
		rb = bpf_rbtree_remove(&b->root, rb);
		bpf_spin_unlock(&b->lock);
		if (!rb)
			return -3;
		n = container_of(rb, struct relem, node);
		h = h * 31 + n->key;
		bpf_obj_drop(n);
	}
	for (int i = 0; i < 16; i++)
		if (rpop(b) < 0)
			break;
	return h & 0x7fffffff;
}

SEC("tc")
int rbtree_add_one(struct __sk_buff *skb)
{
	struct bval *b = GET(bmap);

	return radd(b, skb->len, skb->len * 2);
}

SEC("tc")
int rbtree_take(struct __sk_buff *skb)
{
	struct bval *b = GET(bmap);

	return rpop(b);
}

/* One refcounted object in the tree and the list at once; a second push
 * of the same node into the list fails (-EINVAL) and drops its reference. */
SEC("tc")
int refcounted(struct __sk_buff *skb)
{
	struct cval *c = GET(cmap);
	struct rcelem *n, *m, *k;
	struct bpf_rb_node *rb;
	struct bpf_list_node *l;
	long r = 0;
	int err;

	n = bpf_obj_new(struct rcelem);
	if (!n)
		return -1;
	n->key = 7;
	m = bpf_refcount_acquire(n);
	if (!m) {
		bpf_obj_drop(n);
		return -2;
	}
	k = bpf_refcount_acquire(m);
	if (!k) {
		bpf_obj_drop(n);
		bpf_obj_drop(m);
		return -3;
	}
	bpf_spin_lock(&c->lock);
	bpf_rbtree_add(&c->root, &n->rb, rcless);
	bpf_list_push_front(&c->head, &m->list);
	err = bpf_list_push_back(&c->head, &k->list);
	bpf_spin_unlock(&c->lock);
	r = err == -22 ? 1 : 0;

	bpf_spin_lock(&c->lock);
	l = bpf_list_pop_front(&c->head);
	rb = bpf_rbtree_first(&c->root);
	if (!rb) {
		bpf_spin_unlock(&c->lock);
		if (l)
			bpf_obj_drop(container_of(l, struct rcelem, list));
		return -4;
	}
	rb = bpf_rbtree_remove(&c->root, rb);
	bpf_spin_unlock(&c->lock);
	if (l) {
		m = container_of(l, struct rcelem, list);
		r += m->key * 10;
		bpf_obj_drop(m);
	}
	if (rb) {
		n = container_of(rb, struct rcelem, rb);
		r += n->key * 100;
		bpf_obj_drop(n);
	}
	return r;
}

/* A list in a hash map's value: the element's deletion frees its nodes. */
SEC("tc")
int map_list_add(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct mval *v = bpf_map_lookup_elem(&lists, &key);
	struct lelem *n;

	if (!v) {
		struct mval zero = {};

		bpf_map_update_elem(&lists, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&lists, &key);
		if (!v)
			return -1;
	}
	n = bpf_obj_new(struct lelem);
	if (!n)
		return -2;
	n->val = skb->len;
	bpf_spin_lock(&v->lock);
	bpf_list_push_front(&v->head, &n->node);
	bpf_spin_unlock(&v->lock);
	return 0;
}

SEC("tc")
int map_list_count(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct mval *v = bpf_map_lookup_elem(&lists, &key);
	long n = 0;

	if (!v)
		return -1;
	for (int i = 0; i < 16; i++) {
		struct bpf_list_node *l;

		bpf_spin_lock(&v->lock);
		l = bpf_list_pop_back(&v->head);
		bpf_spin_unlock(&v->lock);
		if (!l)
			break;
		n = n * 10 + (__u64)container_of(l, struct lelem, node)->val % 10;
		bpf_obj_drop(container_of(l, struct lelem, node));
	}
	return n;
}

/* Deleting the element frees the nodes its list holds. */
SEC("tc")
int map_list_del(struct __sk_buff *skb)
{
	__u32 key = 0;

	return bpf_map_delete_elem(&lists, &key);
}

/* Benchmarks: 32 objects allocated and dropped; 32 keys added to an
 * rbtree and removed smallest first. */
SEC("tc")
int bench_obj(struct __sk_buff *skb)
{
	long sum = 0;

	for (int i = 0; i < 32; i++) {
		struct lelem *n = bpf_obj_new(struct lelem);

		if (!n)
			return -1;
		n->val = i;
		sum += n->val;
		bpf_obj_drop(n);
	}
	return sum;
}

SEC("tc")
int bench_rbtree(struct __sk_buff *skb)
{
	struct bval *b = GET(bmap);
	__u64 x = 1;
	long sum = 0;

	for (int i = 0; i < 32; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if (radd(b, (x >> 33) % 1000, i))
			return -1;
	}
	for (int i = 0; i < 32; i++) {
		long v = rpop(b);

		if (v < 0)
			return -2;
		sum += v;
	}
	return sum;
}

char _license[] SEC("license") = "GPL";
