//go:build ignore

// iter.c: an iterator over tasks (iter/task) printing each task's tgid,
// pid and comm with BPF_SEQ_PRINTF, a header before the first and the
// last number after the last (the run with a NULL task), and counting the tasks
// it saw in a map. The kernel's last run sees the last task's seq_num. The local structs are vmlinux.h-free, relocated with
// CO-RE against the kernel's. read_user reads user memory.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
	__u64 session_id;
	__u64 seq_num;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	char comm[16];
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("iter/task")
int dump_task(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	__u64 num = ctx->meta->seq_num;
	__u32 k = 0;
	__u64 *n;

	if (!task) {
		BPF_SEQ_PRINTF(seq, "last %llu\n", num);
		return 0;
	}
	if (num == 0)
		BPF_SEQ_PRINTF(seq, "tgid pid comm\n");
	BPF_SEQ_PRINTF(seq, "%d %d %s\n", task->tgid, task->pid, task->comm);
	n = bpf_map_lookup_elem(&seen, &k);
	if (n)
		*n += 1;
	return 0;
}

// read_user, sleepable, prints the 8 bytes at user address 0x10000 of
// the reader's task (bpf_copy_from_user), or the error.
SEC("iter.s/task")
int read_user(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	char buf[8];
	long err;

	if (!ctx->task || ctx->meta->seq_num > 0)
		return 0;
	err = bpf_copy_from_user(buf, sizeof(buf), (void *)0x10000);
	if (err) {
		BPF_SEQ_PRINTF(seq, "error %ld\n", err);
		return 0;
	}
	buf[7] = 0;
	BPF_SEQ_PRINTF(seq, "user %s\n", buf);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
