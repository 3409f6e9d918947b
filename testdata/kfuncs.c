//go:build ignore

// kfuncs.c: tp_btf programs using the task, cgroup and cpumask kfuncs,
// RCU sections and referenced kptrs, as the kernel's task_kfunc_success,
// cgroup_kfunc_success and cpumask_success selftests exercise them (written
// anew for bpfvm). Each returns what its test checks; results also go to
// the "out" array.
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct task_struct {
	int pid;
	struct task_struct *real_parent;
	const struct cpumask *cpus_ptr;
} __attribute__((preserve_access_index));

struct cgroup {
	int level;
} __attribute__((preserve_access_index));

struct cpumask {
	unsigned long bits[1];
} __attribute__((preserve_access_index));

struct bpf_cpumask {
	struct cpumask cpumask;
} __attribute__((preserve_access_index));

extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern struct task_struct *bpf_task_from_pid(int pid) __ksym;
extern struct cgroup *bpf_cgroup_from_id(__u64 cgid) __ksym;
extern struct cgroup *bpf_cgroup_ancestor(struct cgroup *cgrp, int level) __ksym;
extern void bpf_cgroup_release(struct cgroup *cgrp) __ksym;
extern long bpf_task_under_cgroup(struct task_struct *task, struct cgroup *ancestor) __ksym;
extern struct bpf_cpumask *bpf_cpumask_create(void) __ksym;
extern void bpf_cpumask_release(struct bpf_cpumask *cpumask) __ksym;
extern struct bpf_cpumask *bpf_cpumask_acquire(struct bpf_cpumask *cpumask) __ksym;
extern __u32 bpf_cpumask_first(const struct cpumask *cpumask) __ksym;
extern __u32 bpf_cpumask_first_zero(const struct cpumask *cpumask) __ksym;
extern void bpf_cpumask_set_cpu(__u32 cpu, struct bpf_cpumask *cpumask) __ksym;
extern void bpf_cpumask_clear_cpu(__u32 cpu, struct bpf_cpumask *cpumask) __ksym;
extern bool bpf_cpumask_test_cpu(__u32 cpu, const struct cpumask *cpumask) __ksym;
extern bool bpf_cpumask_test_and_set_cpu(__u32 cpu, struct bpf_cpumask *cpumask) __ksym;
extern bool bpf_cpumask_and(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2) __ksym;
extern void bpf_cpumask_or(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2) __ksym;
extern void bpf_cpumask_xor(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2) __ksym;
extern bool bpf_cpumask_equal(const struct cpumask *src1, const struct cpumask *src2) __ksym;
extern bool bpf_cpumask_subset(const struct cpumask *src1, const struct cpumask *src2) __ksym;
extern bool bpf_cpumask_empty(const struct cpumask *cpumask) __ksym;
extern void bpf_cpumask_copy(struct bpf_cpumask *dst, const struct cpumask *src) __ksym;
extern __u32 bpf_cpumask_weight(const struct cpumask *cpumask) __ksym;
extern __u32 bpf_cpumask_any_distribute(const struct cpumask *cpumask) __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;

struct stash {
	struct bpf_cpumask __attribute__((btf_type_tag("kptr"))) *mask;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stash);
} stashes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} out SEC(".maps");

static void put(__u32 k, __u64 v)
{
	bpf_map_update_elem(&out, &k, &v, BPF_ANY);
}

#define M(p) ((const struct cpumask *)(p))

// task_acquire: acquires and releases the new task; 1 if it got one.
SEC("tp_btf/task_newtask")
int BPF_PROG(task_acquire, struct task_struct *task, __u64 clone_flags)
{
	struct task_struct *t = bpf_task_acquire(task);

	if (!t)
		return 0;
	bpf_task_release(t);
	return 1;
}

// task_lookup: finds the current task by its pid; 1 if found.
SEC("tp_btf/task_newtask")
int BPF_PROG(task_lookup, struct task_struct *task, __u64 clone_flags)
{
	struct task_struct *t = bpf_task_from_pid((int)bpf_get_current_pid_tgid());

	if (!t)
		return 0;
	bpf_task_release(t);
	return 1;
}

// parent_rcu: acquires the new task's parent inside an RCU section.
SEC("tp_btf/task_newtask")
int BPF_PROG(parent_rcu, struct task_struct *task, __u64 clone_flags)
{
	struct task_struct *p;

	bpf_rcu_read_lock();
	p = bpf_task_acquire(task->real_parent);
	bpf_rcu_read_unlock();
	if (!p)
		return 0;
	bpf_task_release(p);
	return 1;
}

// cgroups: the root cgroup by id, its ancestor at level 0 (itself), and
// whether the new task is under it: 1 + 2 + 4 when all hold.
SEC("tp_btf/task_newtask")
int BPF_PROG(cgroups, struct task_struct *task, __u64 clone_flags)
{
	struct cgroup *cg, *anc;
	int ret = 0;

	cg = bpf_cgroup_from_id(1);
	if (!cg)
		return 0;
	ret |= 1;
	anc = bpf_cgroup_ancestor(cg, 0);
	if (anc) {
		ret |= 2;
		if (bpf_task_under_cgroup(task, anc))
			ret |= 4;
		bpf_cgroup_release(anc);
	}
	anc = bpf_cgroup_ancestor(cg, 5);
	if (anc) {
		ret |= 8; // no such level: never
		bpf_cgroup_release(anc);
	}
	bpf_cgroup_release(cg);
	return ret;
}

// masks: cpumask arithmetic; the results go to out[0..9].
SEC("tp_btf/task_newtask")
int BPF_PROG(masks, struct task_struct *task, __u64 clone_flags)
{
	struct bpf_cpumask *a, *b, *c;
	int ret = 0;

	a = bpf_cpumask_create();
	if (!a)
		return -1;
	b = bpf_cpumask_create();
	if (!b) {
		bpf_cpumask_release(a);
		return -1;
	}
	c = bpf_cpumask_acquire(a);
	put(0, bpf_cpumask_empty(M(a)));
	bpf_cpumask_set_cpu(0, a);
	bpf_cpumask_set_cpu(1, c);
	bpf_cpumask_set_cpu(100000, a); // past nr_cpu_ids: nothing
	bpf_cpumask_set_cpu(1, b);
	put(1, bpf_cpumask_weight(M(a)));
	put(2, bpf_cpumask_first_zero(M(a)));
	put(3, bpf_cpumask_test_and_set_cpu(1, b));
	put(4, bpf_cpumask_subset(M(b), M(a)));
	bpf_cpumask_xor(b, M(a), M(b));
	put(5, bpf_cpumask_first(M(b)));
	put(6, bpf_cpumask_and(b, M(a), M(b)));
	bpf_cpumask_or(b, M(b), M(a));
	put(7, bpf_cpumask_equal(M(a), M(b)));
	bpf_cpumask_clear_cpu(0, b);
	bpf_cpumask_copy(c, M(b));
	put(8, bpf_cpumask_test_cpu(0, M(a)));
	put(9, bpf_cpumask_any_distribute(M(a)));
	ret = bpf_cpumask_weight(M(a));
	bpf_cpumask_release(c);
	bpf_cpumask_release(b);
	bpf_cpumask_release(a);
	return ret;
}

// stash_mask: a new cpumask with CPU cpu set goes into the map; the old
// one comes out and is released. 1 if there was one.
SEC("tp_btf/task_newtask")
int BPF_PROG(stash_mask, struct task_struct *task, __u64 clone_flags)
{
	struct bpf_cpumask *m, *old;
	struct stash *s;
	__u32 k = 0;

	s = bpf_map_lookup_elem(&stashes, &k);
	if (!s)
		return -1;
	m = bpf_cpumask_create();
	if (!m)
		return -1;
	bpf_cpumask_set_cpu(clone_flags & 1, m);
	old = bpf_kptr_xchg(&s->mask, m);
	if (!old)
		return 0;
	bpf_cpumask_release(old);
	return 1;
}

// read_stash: whether the stashed cpumask has CPU 1 set, read through the
// RCU kptr: 2 when set, 1 when not, 0 without one.
SEC("tp_btf/task_newtask")
int BPF_PROG(read_stash, struct task_struct *task, __u64 clone_flags)
{
	struct bpf_cpumask *m;
	struct stash *s;
	__u32 k = 0;

	s = bpf_map_lookup_elem(&stashes, &k);
	if (!s)
		return -1;
	bpf_rcu_read_lock();
	m = s->mask;
	if (!m) {
		bpf_rcu_read_unlock();
		return 0;
	}
	k = bpf_cpumask_test_cpu(1, M(m)) ? 2 : 1;
	bpf_rcu_read_unlock();
	return k;
}

// take_stash: takes the stashed cpumask out and releases it.
SEC("tp_btf/task_newtask")
int BPF_PROG(take_stash, struct task_struct *task, __u64 clone_flags)
{
	struct bpf_cpumask *old;
	struct stash *s;
	__u32 k = 0;

	s = bpf_map_lookup_elem(&stashes, &k);
	if (!s)
		return -1;
	old = bpf_kptr_xchg(&s->mask, NULL);
	if (!old)
		return 0;
	bpf_cpumask_release(old);
	return 1;
}

char _license[] SEC("license") = "GPL";
