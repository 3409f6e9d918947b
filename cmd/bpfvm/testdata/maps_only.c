// maps_only.c: an object with a map and no programs.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, int);
	__type(value, long);
	__uint(max_entries, 1);
} counts SEC(".maps");

char LICENSE[] SEC("license") = "GPL";
