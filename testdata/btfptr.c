//go:build ignore

// btfptr.c: programs that read kernel objects through pointers typed by the
// kernel's BTF: a tp_btf program reading the tasks sched_switch passes, an
// fentry program reading a kernel test function's argument, and XDP and tc
// programs that make such pointers with bpf_rdonly_cast and
// bpf_cast_to_kern_ctx. The local types are vmlinux.h-free, relocated with
// CO-RE against the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct task_struct {
	int pid;
	int tgid;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));

struct sk_buff {
	unsigned int len;
} __attribute__((preserve_access_index));

struct bpf_fentry_test_t {
	struct bpf_fentry_test_t *a;
} __attribute__((preserve_access_index));

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

// on_switch reads the pids of the tasks switched, the next one's parent's
// tgid through a pointer walked from it.
SEC("tp_btf/sched_switch")
int on_switch(unsigned long long *ctx)
{
	struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];

	return prev->pid + next->real_parent->tgid;
}

// test7_next is where on_test7 leaves what it read.
unsigned long test7_next;

// on_test7 follows the kernel test function's self-referencing argument.
SEC("fentry/bpf_fentry_test7")
int on_test7(unsigned long long *ctx)
{
	struct bpf_fentry_test_t *arg = (void *)ctx[0];

	test7_next = (unsigned long)arg->a->a;
	return 0;
}

// cast_unmapped reads a task at an address nothing is mapped at: the
// probe load reads 0, in the kernel and in bpfvm.
SEC("xdp")
int cast_unmapped(struct xdp_md *ctx)
{
	struct task_struct *t = bpf_rdonly_cast((void *)0x1000, bpf_core_type_id_kernel(struct task_struct));

	return t->pid + t->tgid + 2;
}

// skb_len reads the kernel's sk_buff behind the context.
SEC("tc")
int skb_len(struct __sk_buff *ctx)
{
	struct sk_buff *skb = bpf_cast_to_kern_ctx(ctx);

	return skb->len > 0;
}

char _license[] SEC("license") = "GPL";
