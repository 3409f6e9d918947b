//go:build ignore

// map_perf.c is the map-lookup microbenchmark of the kernel patch series
// that inlined bpf_map_lookup_elem: every run does 64 lookups in an array
// map (array_lookup) or a hash map (hash_lookup), each lookup's result feeding
// the next key so the lookups cannot be batched.
//
// Behaviour: both maps hold key k -> value k+1 for k in [0, 64) once user
// space fills them; each program returns the sum of the 64 values it found
// (2080 when filled, 0 when empty).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define LOOKUPS 64

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} perf_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} perf_hash SEC(".maps");

SEC("xdp")
int array_lookup(struct xdp_md *ctx)
{
	__u64 sum = 0;
	__u32 key = 0;

#pragma unroll
	for (int i = 0; i < LOOKUPS; i++) {
		__u64 *v = bpf_map_lookup_elem(&perf_array, &key);
		if (v)
			sum += *v;
		key = (key + 1 + (sum & 0)) & (LOOKUPS - 1);
	}
	return sum;
}

SEC("xdp")
int hash_lookup(struct xdp_md *ctx)
{
	__u64 sum = 0;
	__u32 key = 0;

#pragma unroll
	for (int i = 0; i < LOOKUPS; i++) {
		__u64 *v = bpf_map_lookup_elem(&perf_hash, &key);
		if (v)
			sum += *v;
		key = (key + 1 + (sum & 0)) & (LOOKUPS - 1);
	}
	return sum;
}

char _license[] SEC("license") = "GPL";
