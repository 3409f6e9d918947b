// mapofmaps.c: an array and a hash of maps with inner maps to put in them,
// and a program array, for map update's MAP and PROG values (bpftool's
// "value id N | name NAME | pinned PATH").
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, unsigned int);
	__type(value, unsigned int);
};

struct inner inner_a SEC(".maps");
struct inner inner_b SEC(".maps");

// Another shape: a map of maps refuses it.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2);
	__type(key, unsigned int);
	__type(value, unsigned int);
} other SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, unsigned int);
	__array(values, struct inner);
} outer SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, unsigned int);
	__array(values, struct inner);
} outer_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__type(key, unsigned int);
	__type(value, unsigned int);
} jumps SEC(".maps");

// Returns inner[0] of the map in outer[0] (1 when there is none), after
// trying the program in jumps[0].
SEC("xdp")
int lookup(struct xdp_md *ctx)
{
	unsigned int zero = 0;
	bpf_tail_call(ctx, &jumps, 0);
	void *in = bpf_map_lookup_elem(&outer, &zero);
	if (!in)
		return XDP_DROP;
	unsigned int *v = bpf_map_lookup_elem(in, &zero);
	return v ? *v : XDP_DROP;
}

SEC("xdp")
int tail(struct xdp_md *ctx)
{
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
