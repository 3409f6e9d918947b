//go:build ignore

// iter_objs.c: iterators over kernel objects. dump_files (iter/task_file)
// prints each open file of the task whose tgid the target map holds: its
// fd, f_flags (hex), f_pos and inode number. dump_tcp (iter/tcp) and
// dump_udp (iter/udp) print each socket's family, state, local and remote
// port and owner uid. The local structs are vmlinux.h-free, relocated with
// CO-RE against the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
	__u64 session_id;
	__u64 seq_num;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
} __attribute__((preserve_access_index));

struct file {
	unsigned int f_flags;
	long long f_pos;
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct bpf_iter__task_file {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
	__u32 fd;
	struct file *file;
} __attribute__((preserve_access_index));

struct sock_common {
	unsigned short skc_family;
	volatile unsigned char skc_state;
	__u16 skc_num;
	__be16 skc_dport;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct inet_sock {
	struct sock sk;
} __attribute__((preserve_access_index));

struct udp_sock {
	struct inet_sock inet;
} __attribute__((preserve_access_index));

struct bpf_iter__tcp {
	struct bpf_iter_meta *meta;
	struct sock_common *sk_common;
	__u32 uid;
} __attribute__((preserve_access_index));

struct bpf_iter__udp {
	struct bpf_iter_meta *meta;
	struct udp_sock *udp_sk;
	__u32 uid;
	int bucket;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} target SEC(".maps");

SEC("iter/task_file")
int dump_files(struct bpf_iter__task_file *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct file *file = ctx->file;
	__u32 k = 0, *tgid;

	if (!task || !file)
		return 0;
	tgid = bpf_map_lookup_elem(&target, &k);
	if (!tgid || task->tgid != *tgid)
		return 0;
	BPF_SEQ_PRINTF(seq, "file %d %u %x %lld %lu\n", task->tgid, ctx->fd, file->f_flags,
		       file->f_pos, file->f_inode->i_ino);
	return 0;
}

SEC("iter/tcp")
int dump_tcp(struct bpf_iter__tcp *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct sock_common *sk = ctx->sk_common;

	if (!sk)
		return 0;
	BPF_SEQ_PRINTF(seq, "tcp %u %u %u %u %u\n", sk->skc_family, sk->skc_state, sk->skc_num,
		       bpf_ntohs(sk->skc_dport), ctx->uid);
	return 0;
}

SEC("iter/udp")
int dump_udp(struct bpf_iter__udp *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct udp_sock *udp = ctx->udp_sk;
	struct sock_common *sk;

	if (!udp)
		return 0;
	sk = &udp->inet.sk.__sk_common;
	BPF_SEQ_PRINTF(seq, "udp %u %u %u %u %u\n", sk->skc_family, sk->skc_state, sk->skc_num,
		       bpf_ntohs(sk->skc_dport), ctx->uid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
