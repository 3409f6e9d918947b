// unsupported_map.c: an object with a map type bpfvm does not implement
// (user_ringbuf), for the CLI's error messages.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_USER_RINGBUF);
	__uint(max_entries, 4096);
} socks SEC(".maps");

SEC("xdp")
int report(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
