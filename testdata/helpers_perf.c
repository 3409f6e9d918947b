//go:build ignore

// Test programs for bpf_perf_event_output. Each reads its flags and
// sample size from the config map, outputs that many bytes of a 64-byte
// pattern (1, 2, 3, ...) to events and returns the helper's result. events
// has no max_entries, as Cilium's cilium_events: the loader fills in the
// number of CPUs.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

struct config {
	__u64 flags;
	__u32 size;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

static __always_inline long output(void *ctx)
{
	__u8 buf[64];
	__u32 key = 0;
	struct config *c = bpf_map_lookup_elem(&config, &key);
	if (!c)
		return -1;
#pragma unroll
	for (int i = 0; i < 64; i++)
		buf[i] = i + 1;
	__u32 size = c->size;
	if (size > sizeof(buf))
		return -2;
	return bpf_perf_event_output(ctx, &events, c->flags, buf, size);
}

SEC("tc")
int perf_tc(struct __sk_buff *skb) { return output(skb); }

SEC("xdp")
int perf_xdp(struct xdp_md *xdp) { return output(xdp); }

SEC("socket")
int perf_socket(struct __sk_buff *skb) { return output(skb); }

char _license[] SEC("license") = "GPL";
