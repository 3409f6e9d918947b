//go:build ignore

// tracing.c holds programs of the tracing types without BTF pointers, as
// libbpf tools write them: a kprobe and a kretprobe with BPF_KPROBE and
// BPF_KRETPROBE (the probed arguments from x86-64 struct pt_regs), a
// tracepoint on its trace_event_raw record, a raw tracepoint on its
// arguments, a perf_event sampler, and an execsnoop-like tracepoint
// reading the parent's tgid with BPF_CORE_READ (CO-RE relocations against
// the kernel's struct task_struct). Each records what it saw in the
// "events" map (struct event by key) and returns a value the tests check;
// the raw tracepoint runs in the kernel's test run too.
#define __TARGET_ARCH_x86
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

struct event {
	__u64 pid_tgid, uid_gid, cgroup, ip, cookie, task;
	__s64 ret;
	__s64 len;
	char comm[16];
	char name[32];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct event);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

// The keys of events.
enum { EV_OPEN = 1, EV_OPEN_RET, EV_TP, EV_RAW_TP, EV_PERF, EV_EXEC };

static struct event *event(__u32 key)
{
	struct event zero = {};

	bpf_map_update_elem(&events, &key, &zero, BPF_ANY);
	return bpf_map_lookup_elem(&events, &key);
}

static void current_task(struct event *e)
{
	e->pid_tgid = bpf_get_current_pid_tgid();
	e->uid_gid = bpf_get_current_uid_gid();
	e->cgroup = bpf_get_current_cgroup_id();
	e->task = bpf_get_current_task();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

// kprobe_openat is do_sys_openat2(int dfd, const char __user *filename,
// struct open_how *how): the file name read from user memory, the mode
// from the kernel's struct open_how (flags, mode, resolve: u64 each). It
// returns the name's length.
SEC("kprobe/do_sys_openat2")
int BPF_KPROBE(kprobe_openat, int dfd, const char *filename, void *how)
{
	struct event *e = event(EV_OPEN);
	__u64 mode = 0;

	if (!e)
		return 0;
	current_task(e);
	e->ip = bpf_get_func_ip(ctx);
	e->cookie = bpf_get_attach_cookie(ctx);
	e->len = bpf_probe_read_user_str(e->name, sizeof(e->name), filename);
	e->ret = bpf_probe_read_kernel(&mode, sizeof(mode), how + 8);
	if (e->ret == 0)
		e->ret = mode;
	if (dfd == -100 && e->len > 0 && e->name[0] == '/')
		bpf_send_signal(10);
	return e->len;
}

// kretprobe_openat records the return value and returns it.
SEC("kretprobe/do_sys_openat2")
int BPF_KRETPROBE(kretprobe_openat, long ret)
{
	struct event *e = event(EV_OPEN_RET);

	if (!e)
		return 0;
	current_task(e);
	e->ret = ret;
	return ret;
}

// struct trace_event_raw_sys_enter, the record of raw_syscalls:sys_enter.
struct trace_event_raw_sys_enter {
	unsigned short common_type;
	unsigned char common_flags;
	unsigned char common_preempt_count;
	int common_pid;
	long id;
	unsigned long args[6];
};

// tp_sys_enter counts system calls by number and records the first
// argument's string (openat's name, say); it returns the number.
SEC("tracepoint/raw_syscalls/sys_enter")
int tp_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 id = ctx->id;
	__u64 one = 1, *n = bpf_map_lookup_elem(&counts, &id);
	struct event *e;

	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&counts, &id, &one, BPF_NOEXIST);
	e = event(EV_TP);
	if (!e)
		return 0;
	current_task(e);
	e->cookie = bpf_get_attach_cookie(ctx);
	e->len = bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)ctx->args[1]);
	return id;
}

// raw_tp_sys_enter reads the system call's number from its arguments
// (struct pt_regs *regs, long id) and its registers' orig_rax from kernel
// memory; it returns the number plus the read's result times 1000.
SEC("raw_tracepoint/sys_enter")
int raw_tp_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	long id = ctx->args[1], orig = 0;
	struct event *e = event(EV_RAW_TP);
	char local[8] = "local";

	if (!e)
		return 0;
	current_task(e);
	e->ret = bpf_probe_read_kernel(&orig, sizeof(orig), &regs->orig_rax);
	e->ip = orig;
	e->len = bpf_probe_read_kernel_str(e->name, sizeof(e->name), local);
	return id + e->ret * 1000;
}

// perf_sample records a sample: the period, the address, the sampled
// instruction pointer, the counter and the kernel stack's innermost frame;
// it returns the number of frames.
SEC("perf_event")
int perf_sample(struct bpf_perf_event_data *ctx)
{
	struct bpf_perf_event_value v = {};
	__u64 stack[4] = {};
	struct event *e = event(EV_PERF);
	long n;

	if (!e)
		return 0;
	current_task(e);
	e->ip = PT_REGS_IP(&ctx->regs);
	e->cookie = ctx->sample_period;
	e->ret = ctx->addr;
	if (bpf_perf_prog_read_value(ctx, &v, sizeof(v)) == 0)
		e->len = v.counter;
	n = bpf_get_stack(ctx, stack, sizeof(stack), 0);
	if (n < 0)
		return n;
	e->task = stack[0];
	return n / 8;
}

// The kernel's struct task_struct, as much of it as execsnoop reads: CO-RE
// finds the fields in the target's.
struct task_struct {
	int tgid;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));

// tp_execve records an exec as libbpf-tools' execsnoop does: the task's
// parent's tgid through task_struct pointers, the file name from user
// memory. It returns the parent's tgid.
SEC("tracepoint/syscalls/sys_enter_execve")
int tp_execve(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct event *e = event(EV_EXEC);

	if (!e)
		return 0;
	current_task(e);
	e->ret = BPF_CORE_READ(task, real_parent, tgid);
	e->len = bpf_probe_read_user_str(e->name, sizeof(e->name), (const char *)ctx->args[0]);
	return e->ret;
}

char _license[] SEC("license") = "GPL";
