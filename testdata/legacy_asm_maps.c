//go:build ignore

// legacy_asm_maps.c tests legacy map definitions whose ELF symbols carry no
// size or type (st_size 0, STT_NOTYPE), as objects from old toolchains and
// hand-written assembly have them. Loaders must derive the entry size from
// the section (section size / number of map symbols = 20 bytes, a
// struct bpf_map_def) rather than from the symbols. cilium/ebpf v0.22.0 on
// its own fails with "map counts: missing type".
//
// Maps (struct bpf_map_def: type, key_size, value_size, max_entries, flags):
//   - counts (ARRAY, u32 -> u64, 4 entries)
//   - limits (HASH, u32 -> u32, 16 entries, BPF_F_NO_PREALLOC)
//
// Behaviour: a socket filter that increments counts[1] and returns
// limits[1], or 0 when limits has no entry for key 1.
//
// Expected: on empty maps any packet returns 0 and leaves counts[1] = 1;
// with limits = {1: 77} it returns 77.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// The map definitions are emitted with top-level asm so that the symbols get
// neither .size nor .type, which C declarations always produce. The values
// are BPF_MAP_TYPE_ARRAY (2) and BPF_MAP_TYPE_HASH (1) with BPF_F_NO_PREALLOC.
asm(
"	.pushsection maps,\"aw\",@progbits\n"
"	.p2align 2\n"
"	.globl counts\n"
"counts:\n"
"	.long 2, 4, 8, 4, 0\n"
"	.globl limits\n"
"limits:\n"
"	.long 1, 4, 4, 16, 1\n"
"	.popsection\n");

extern char counts[], limits[];

SEC("socket")
int legacy_asm_entry(struct __sk_buff *skb)
{
	__u32 key = 1;
	__u64 *count = bpf_map_lookup_elem(counts, &key);
	__u32 *limit;

	if (count)
		__sync_fetch_and_add(count, 1);
	limit = bpf_map_lookup_elem(limits, &key);
	return limit ? *limit : 0;
}

char _license[] SEC("license") = "GPL";
