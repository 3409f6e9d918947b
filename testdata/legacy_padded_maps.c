//go:build ignore

// legacy_padded_maps.c tests legacy map definitions longer than the 20-byte
// struct bpf_map_def: the 28-byte layout of the kernel's old samples/bpf
// loader, which adds inner_map_idx and numa_node. Loaders accept the extra
// fields when they are zero, as libbpf does, and reject them otherwise.
//
// Maps:
//   - hits (PERCPU_HASH, u32 -> u64, 32 entries)
//   - last (ARRAY, u32 -> u32, 1 entry)
//
// Behaviour: an XDP program that stores the packet length in last[0],
// increments hits[length & 31] (inserting 1 when missing) and returns
// XDP_PASS (2).
//
// Expected: a 60-byte packet on empty maps returns 2 and leaves
// last[0] = 60 and hits = {28: 1} on the running CPU.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// bpf_map_def_ext is samples/bpf's bpf_map_def: 7 x u32, 28 bytes.
struct bpf_map_def_ext {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
	unsigned int inner_map_idx;
	unsigned int numa_node;
};

struct bpf_map_def_ext SEC("maps") hits = {
	.type = BPF_MAP_TYPE_PERCPU_HASH,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 32,
};

struct bpf_map_def_ext SEC("maps") last = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u32),
	.max_entries = 1,
};

SEC("xdp")
int legacy_padded_entry(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	__u32 key = 0;
	__u32 *lastp;
	__u64 *hit, one = 1;

	lastp = bpf_map_lookup_elem(&last, &key);
	if (lastp)
		*lastp = len;

	key = len & 31;
	hit = bpf_map_lookup_elem(&hits, &key);
	if (hit)
		*hit += 1;
	else
		bpf_map_update_elem(&hits, &key, &one, BPF_NOEXIST);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
