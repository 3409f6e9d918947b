//go:build ignore

// helpers_env.c exercises the helpers that describe the environment:
// bpf_ktime_get_ns, bpf_ktime_get_boot_ns, bpf_ktime_get_coarse_ns,
// bpf_jiffies64, bpf_get_prandom_u32, bpf_get_smp_processor_id,
// bpf_get_numa_node_id, bpf_get_current_pid_tgid, bpf_get_current_uid_gid
// and bpf_get_current_comm. The results depend on the host, so the tests
// check them against the host (or the configured Task) rather than the
// kernel.
//
// env writes struct env_out after the Ethernet header and returns 0.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct env_out {
	__u64 ktime, boot, coarse, jiffies;
	__u32 rand[4];
	__u32 cpu, numa;
	__u64 pid_tgid, uid_gid;
	char comm[16];
	char comm4[4]; // bpf_get_current_comm with a 4-byte buffer
	__u32 pad;
};

SEC("xdp")
int env(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct env_out *o = data + 14;
	char comm[16], comm4[4];

	if ((void *)(o + 1) > end)
		return -1;
	o->ktime = bpf_ktime_get_ns();
	o->boot = bpf_ktime_get_boot_ns();
	o->coarse = bpf_ktime_get_coarse_ns();
	o->jiffies = bpf_jiffies64();
	for (int i = 0; i < 4; i++)
		o->rand[i] = bpf_get_prandom_u32();
	o->cpu = bpf_get_smp_processor_id();
	o->numa = bpf_get_numa_node_id();
	o->pid_tgid = bpf_get_current_pid_tgid();
	o->uid_gid = bpf_get_current_uid_gid();
	bpf_get_current_comm(comm, sizeof(comm));
	bpf_get_current_comm(comm4, sizeof(comm4));
	__builtin_memcpy(o->comm, comm, sizeof(comm));
	__builtin_memcpy(o->comm4, comm4, sizeof(comm4));
	return 0;
}

char _license[] SEC("license") = "GPL";
