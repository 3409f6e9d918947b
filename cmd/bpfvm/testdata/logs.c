// logs.c: programs with branches and a global function, for comparing the
// verifier log's shape with the kernel's at levels 1 and 2: which paths a
// level-1 log keeps, and the source lines.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// Accepted: every path of the branches ends well.
SEC("xdp")
int branches(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned char *p = data;
	if (data + 4 > end)
		return XDP_PASS;
	if (p[0] == 1)
		return XDP_DROP;
	if (p[1] == 2)
		return XDP_TX;
	return p[2] == 3 ? XDP_ABORTED : XDP_PASS;
}

// Rejected on a later path: the read past the checked bytes is reached
// only when the first bytes match.
SEC("xdp")
int late_reject(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned char *p = data;
	if (data + 4 > end)
		return XDP_PASS;
	if (p[0] == 1)
		return XDP_DROP;
	if (p[1] == 2)
		return p[8];
	return XDP_PASS;
}

// Rejected on a branch queued earlier: the level-1 log keeps the path to
// it, not the paths explored before.
SEC("xdp")
int queued_reject(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned char *p = data;
	if (data + 4 > end)
		return XDP_PASS;
	if (p[0] != 1) {
		if (p[1] == 5)
			return XDP_TX;
		return XDP_DROP;
	}
	return p[9];
}

__attribute__((noinline)) int check(struct xdp_md *ctx)
{
	if (!ctx)
		return 0;
	return ctx->ingress_ifindex == 7;
}

// Calls a global function: verified on its own.
SEC("xdp")
int with_global(struct xdp_md *ctx)
{
	return check(ctx) ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
