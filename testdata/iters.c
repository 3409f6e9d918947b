//go:build ignore

// iters.c: open-coded iterators. bits walks the set bits of words (a
// global array the test fills) with bpf_iter_bits, from the pointer the
// test chooses (the words, NULL, a user address), recording new's result,
// the number of bits and a hash of their numbers. tasks walks the world's
// tasks from a tp_btf program with bpf_iter_task, vmas the current task's
// memory areas with bpf_iter_task_vma, cgroups counts the cgroups below
// the root with bpf_iter_css and each one's tasks with bpf_iter_css_task (an
// iterator program, where the kernel allows it), recording what they
// saw (read with bpf_probe_read_kernel, which reads the world's memory).
// Written anew for bpfvm.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
} __attribute__((preserve_access_index));

struct cgroup {
	int level;
} __attribute__((preserve_access_index));
struct cgroup_subsys_state {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

struct seq_file;
struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

struct bpf_iter_bits {
	__u64 __opaque[2];
} __attribute__((aligned(8)));
struct bpf_iter_task {
	__u64 __opaque[3];
} __attribute__((aligned(8)));
struct bpf_iter_task_vma {
	__u64 __opaque[1];
} __attribute__((aligned(8)));
struct bpf_iter_css {
	__u64 __opaque[3];
} __attribute__((aligned(8)));
struct bpf_iter_css_task {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_bits_new(struct bpf_iter_bits *it, const __u64 *unsafe_ptr__ign, __u32 nr_words) __ksym;
extern int *bpf_iter_bits_next(struct bpf_iter_bits *it) __ksym;
extern void bpf_iter_bits_destroy(struct bpf_iter_bits *it) __ksym;
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task, unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;
extern int bpf_iter_css_new(struct bpf_iter_css *it, struct cgroup_subsys_state *start, unsigned int flags) __ksym;
extern struct cgroup_subsys_state *bpf_iter_css_next(struct bpf_iter_css *it) __ksym;
extern void bpf_iter_css_destroy(struct bpf_iter_css *it) __ksym;
extern int bpf_iter_css_task_new(struct bpf_iter_css_task *it, struct cgroup_subsys_state *css, unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_css_task_next(struct bpf_iter_css_task *it) __ksym;
extern void bpf_iter_css_task_destroy(struct bpf_iter_css_task *it) __ksym;
extern struct cgroup *bpf_cgroup_from_id(__u64 cgid) __ksym;
extern void bpf_cgroup_release(struct cgroup *cgrp) __ksym;

__u64 words[520];
__u32 nr_words;
__u32 ptr_kind;
__s64 bits_ret;
__u64 bits_n, bits_hash;

SEC("xdp")
int bits(struct xdp_md *ctx)
{
	struct bpf_iter_bits it;
	const __u64 *p = words;
	__u64 n = 0, hash = 0;
	int *b;

	if (ptr_kind == 1)
		p = 0;
	else if (ptr_kind == 2)
		p = (const __u64 *)0x10000;
	bits_ret = bpf_iter_bits_new(&it, p, nr_words);
	while ((b = bpf_iter_bits_next(&it))) {
		n++;
		hash = hash * 31 + *b;
	}
	/* Past the end it stays drained. */
	if (bpf_iter_bits_next(&it))
		n += 1000000;
	bpf_iter_bits_destroy(&it);
	bits_n = n;
	bits_hash = hash;
	return XDP_PASS;
}

__u32 task_flags;
__u64 tasks_n;
__s64 tasks_ret;
__u64 tasks_hash;

SEC("tp_btf/task_newtask")
int BPF_PROG(tasks, struct task_struct *task, __u64 clone_flags)
{
	struct bpf_iter_task it;
	struct task_struct *pos;
	__u64 n = 0, hash = 0;

	tasks_ret = bpf_iter_task_new(&it, task_flags == 2 ? task : 0, task_flags);
	while ((pos = bpf_iter_task_next(&it))) {
		hash = hash * 31 + BPF_CORE_READ(pos, pid);
		n++;
	}
	bpf_iter_task_destroy(&it);
	tasks_n = n;
	tasks_hash = hash;
	return 0;
}

__u64 vma_addr;
__u64 vmas_n;
__s64 vmas_ret;
__u64 vmas_hash;

SEC("tp_btf/task_newtask")
int BPF_PROG(vmas, struct task_struct *task, __u64 clone_flags)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	__u64 n = 0, hash = 0;

	vmas_ret = bpf_iter_task_vma_new(&it, task, vma_addr);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		hash = hash * 31 + BPF_CORE_READ(vma, vm_start);
		n++;
	}
	bpf_iter_task_vma_destroy(&it);
	vmas_n = n;
	vmas_hash = hash;
	return 0;
}

__u32 css_order;
__u64 css_n;
__s64 css_ret;

SEC("tp_btf/task_newtask")
int BPF_PROG(cgroups, struct task_struct *task, __u64 clone_flags)
{
	struct bpf_iter_css it;
	struct cgroup_subsys_state *pos;
	struct cgroup *root;
	__u64 n = 0;

	root = bpf_cgroup_from_id(1);
	if (!root)
		return 0;
	css_ret = bpf_iter_css_new(&it, (struct cgroup_subsys_state *)root, css_order);
	while ((pos = bpf_iter_css_next(&it)))
		n++;
	bpf_iter_css_destroy(&it);
	bpf_cgroup_release(root);
	css_n = n;
	return 0;
}

__u64 cgroup_task_id;
__u64 cgroup_tasks_n;
__s64 cgroup_tasks_ret;
__u32 cgroup_task_flags;

SEC("iter/task")
int cgroup_tasks(struct bpf_iter__task *ctx)
{
	struct bpf_iter_css_task it;
	struct task_struct *pos;
	struct cgroup *cg;
	__u64 n = 0;

	/* Once, at the end. */
	if (ctx->task)
		return 0;
	cg = bpf_cgroup_from_id(cgroup_task_id);
	if (!cg)
		return 0;
	cgroup_tasks_ret = bpf_iter_css_task_new(&it, (struct cgroup_subsys_state *)cg, cgroup_task_flags);
	while ((pos = bpf_iter_css_task_next(&it)))
		n++;
	bpf_iter_css_task_destroy(&it);
	bpf_cgroup_release(cg);
	cgroup_tasks_n = n;
	return 0;
}

/* first_task: the first task of a whole walk, which in the kernel is
 * init_task (pid 0), and the number of processes. */
int first_pid = -1;
__u64 procs_n;

SEC("iter/task")
int first_task(struct bpf_iter__task *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *pos;
	__u64 n = 0;

	if (ctx->task)
		return 0;
	bpf_iter_task_new(&it, 0, 0);
	while ((pos = bpf_iter_task_next(&it))) {
		if (first_pid < 0)
			first_pid = pos->pid;
		n++;
	}
	bpf_iter_task_destroy(&it);
	procs_n = n;
	return 0;
}

char _license[] SEC("license") = "GPL";
