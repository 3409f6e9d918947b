//go:build ignore

// legacy_mixed_maps.c tests an object with both map forms: a BTF map in
// ".maps" and a struct bpf_map_def in the legacy "maps" section, as
// objects migrating from one to the other have them.
//
// Maps:
//   - btf_counts (.maps: ARRAY, u32 -> u64, 1 entry)
//   - old_counts (maps: ARRAY, u32 -> u64, 1 entry)
//
// Behaviour: an XDP program that increments btf_counts[0] by 1 and
// old_counts[0] by 2, and returns XDP_PASS (2).
//
// Expected: one run on empty maps returns 2 and leaves btf_counts[0] = 1,
// old_counts[0] = 2.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} btf_counts SEC(".maps");

struct bpf_map_def SEC("maps") old_counts = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 1,
};

SEC("xdp")
int legacy_mixed_entry(struct xdp_md *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&btf_counts, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
	v = bpf_map_lookup_elem(&old_counts, &key);
	if (v)
		__sync_fetch_and_add(v, 2);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
