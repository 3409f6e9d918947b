//go:build ignore

// legacy_maps.c tests maps declared the pre-BTF way: struct bpf_map_def
// entries in SEC("maps"), as older cilium and suricata objects have them.
//
// Behaviour: a socket filter counting packets per protocol byte.
//   - proto_count (HASH, u32 -> u64, 256 entries, BPF_F_NO_PREALLOC): key is
//     the first packet byte, value incremented (inserted as 1 when missing).
//   - totals (ARRAY, u32 -> u64, 2 entries): [0] += 1, [1] += packet length.
//   - scratch (PERCPU_ARRAY, u32 -> 16-byte value, 1 entry): unused by the
//     code path; checks that unreferenced maps are still parsed.
// Returns skb->len (accept the whole packet), or 0 for an empty packet.
// A socket filter's data starts at the network header.
//
// Expected: for a 28-byte IPv4/UDP packet (first byte 0x45) on empty maps
// the program returns 28 and leaves proto_count = {0x45: 1}, totals[0] = 1,
// totals[1] = 28.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// bpf_map_def is the legacy map definition; libbpf dropped it, so define it
// here with the field names and layout old objects used (5 x u32, 20 bytes).
struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

struct bpf_map_def SEC("maps") proto_count = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 256,
	.map_flags = BPF_F_NO_PREALLOC,
};

struct bpf_map_def SEC("maps") totals = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 2,
};

struct bpf_map_def SEC("maps") scratch = {
	.type = BPF_MAP_TYPE_PERCPU_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = 16,
	.max_entries = 1,
};

SEC("socket")
int legacy_maps_entry(struct __sk_buff *skb)
{
	__u32 key;
	__u64 *val, one = 1;
	__u8 first;

	// Socket filters may not read skb->data directly; use the helper.
	if (bpf_skb_load_bytes(skb, 0, &first, 1) < 0)
		return 0;

	key = first;
	val = bpf_map_lookup_elem(&proto_count, &key);
	if (val)
		__sync_fetch_and_add(val, 1);
	else
		bpf_map_update_elem(&proto_count, &key, &one, BPF_NOEXIST);

	key = 0;
	val = bpf_map_lookup_elem(&totals, &key);
	if (val)
		__sync_fetch_and_add(val, 1);
	key = 1;
	val = bpf_map_lookup_elem(&totals, &key);
	if (val)
		__sync_fetch_and_add(val, skb->len);

	return skb->len;
}

char _license[] SEC("license") = "GPL";
