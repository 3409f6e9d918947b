//go:build ignore

// invalid_legacy_maps.c is malformed on purpose: its SEC("maps") entries are
// 12 bytes, too short for a struct bpf_map_def (20 bytes) or a
// struct bpf_elf_map (36 bytes). Loaders must reject it with an error naming
// the entry; there is nothing to run.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// short_map_def lacks max_entries and map_flags.
struct short_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
};

struct short_map_def SEC("maps") short_map = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u32),
};

SEC("socket")
int invalid_entry(struct __sk_buff *skb)
{
	__u32 key = 0;
	__u32 *val = bpf_map_lookup_elem(&short_map, &key);

	return val ? *val : 0;
}

char _license[] SEC("license") = "GPL";
