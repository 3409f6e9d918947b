//go:build ignore

// map_perf.c is the map-lookup microbenchmark of the kernel patch series
// that inlined bpf_map_lookup_elem: every run does 64 lookups in an array
// map (array_lookup), a hash map (hash_lookup), a per-CPU array
// (percpu_array_lookup), a per-CPU hash (percpu_hash_lookup) or an LRU hash
// (lru_hash_lookup), each lookup's result feeding the next key so the
// lookups cannot be batched.
//
// Behaviour: every map holds key k -> value k+1 for k in [0, 64) once user
// space fills them (per-CPU maps: on every CPU); each program returns the
// sum of the 64 values it found (2080 when filled, 0 when empty). The empty
// program returns 0 and measures the cost of a run itself.
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} perf_percpu_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} perf_percpu_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} perf_lru_hash SEC(".maps");

/* LOOKUP_PROG defines a program doing LOOKUPS lookups in map. */
#define LOOKUP_PROG(name, map)						\
SEC("xdp")								\
int name(struct xdp_md *ctx)						\
{									\
	__u64 sum = 0;							\
	__u32 key = 0;							\
									\
	_Pragma("unroll")						\
	for (int i = 0; i < LOOKUPS; i++) {				\
		__u64 *v = bpf_map_lookup_elem(&map, &key);		\
		if (v)							\
			sum += *v;					\
		key = (key + 1 + (sum & 0)) & (LOOKUPS - 1);		\
	}								\
	return sum;							\
}

LOOKUP_PROG(array_lookup, perf_array)
LOOKUP_PROG(hash_lookup, perf_hash)
LOOKUP_PROG(percpu_array_lookup, perf_percpu_array)
LOOKUP_PROG(percpu_hash_lookup, perf_percpu_hash)
LOOKUP_PROG(lru_hash_lookup, perf_lru_hash)

SEC("xdp")
int empty(struct xdp_md *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
