// perf_map.c: an object with a map type bpfvm does not implement
// (perf_event_array), for the CLI's error messages.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
	__uint(max_entries, 4);
} events SEC(".maps");

SEC("xdp")
int report(struct xdp_md *ctx)
{
	int v = 1;
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &v, sizeof(v));
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
