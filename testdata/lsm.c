//go:build ignore

// lsm.c: LSM programs. deny_write refuses files opened for writing at
// file_open, counting refusals, and passes on an earlier program's
// refusal; exec_count, sleepable, counts bprm_check_security calls. The
// local struct is vmlinux.h-free, relocated with CO-RE against the
// kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct file {
	unsigned int f_flags;
} __attribute__((preserve_access_index));

struct linux_binprm;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static void count(__u32 k)
{
	__u64 *n = bpf_map_lookup_elem(&counts, &k);

	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("lsm/file_open")
int BPF_PROG(deny_write, struct file *file, int ret)
{
	if (ret != 0)
		return ret;
	if (!(file->f_flags & 3)) // O_WRONLY | O_RDWR
		return 0;
	count(0);
	return -1; // -EPERM
}

SEC("lsm.s/bprm_check_security")
int BPF_PROG(exec_count, struct linux_binprm *bprm)
{
	count(1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
