// mixed.c: programs that load, fail, or have no verifier rules, side by
// side in one object, for the CLI's per-program reports.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int ok(struct xdp_md *ctx)
{
	return XDP_PASS;
}

// Reads the packet without a bounds check: the verifier rejects it.
SEC("xdp")
int rejected(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;
	return data[0];
}

// A syscall program calling a helper bpfvm does not implement
// (bpf_task_pt_regs), which the kernel loads.
SEC("syscall")
int probe(void *ctx)
{
	return bpf_task_pt_regs(bpf_get_current_task_btf()) != 0;
}

// A section libbpf and cilium/ebpf know no type for: unspecified.
SEC("mystery")
int unspec(void *ctx)
{
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
