//go:build ignore

// legacy_elf_maps.c tests maps declared with iproute2's struct bpf_elf_map
// (9 x u32, 36 bytes) in SEC("maps"), as objects built for
// `tc filter add ... bpf obj x.o sec classifier` have them, with the tc
// section names "classifier" and "action".
//
// Behaviour:
//   - classifier (cls_entry): counts packets in pkt_count[0] (ARRAY,
//     u32 -> u64, 1 entry, pinned PIN_GLOBAL_NS) and returns the class id
//     stored in class_map[skb->mark & 7] (HASH, u32 -> u32, 8 entries, id 2),
//     or TC_ACT_UNSPEC (-1) when there is none.
//   - action (act_entry): drops (TC_ACT_SHOT, 2) packets whose first byte is
//     0xff, otherwise TC_ACT_OK (0); counts drops in pkt_count[0].
//   - map_in_map (ARRAY_OF_MAPS, 1 entry, inner_id 2) exercises the inner
//     map fields only; no program uses it.
//
// Both see the packet from the Ethernet header on.
//
// Expected, on empty maps: cls_entry on any packet returns -1 and sets
// pkt_count[0] = 1; act_entry on a packet whose first byte is 0xff returns 2
// and sets pkt_count[0] = 1; on a packet starting with 00 it returns 0 and
// leaves pkt_count[0] = 0.
//
// As tc loads it (and as loader.LoadCollectionSpec reports it): class_map
// (id 2) is the inner map template of map_in_map (inner_id 2) and is stored
// in its slot 0 (class_map's inner_idx); pkt_count is pinned by name.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

// bpf_elf_map is iproute2's map definition (include/bpf_elf.h layout):
// nine u32 fields, 36 bytes.
struct bpf_elf_map {
	__u32 type;
	__u32 size_key;
	__u32 size_value;
	__u32 max_elem;
	__u32 flags;
	__u32 id;
	__u32 pinning;
	__u32 inner_id;
	__u32 inner_idx;
};

// Pinning values understood by tc.
#define PIN_NONE 0
#define PIN_OBJECT_NS 1
#define PIN_GLOBAL_NS 2

struct bpf_elf_map SEC("maps") pkt_count = {
	.type = BPF_MAP_TYPE_ARRAY,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u64),
	.max_elem = 1,
	.pinning = PIN_GLOBAL_NS,
};

struct bpf_elf_map SEC("maps") class_map = {
	.type = BPF_MAP_TYPE_HASH,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.max_elem = 8,
	.flags = BPF_F_NO_PREALLOC,
	.id = 2,
};

struct bpf_elf_map SEC("maps") map_in_map = {
	.type = BPF_MAP_TYPE_ARRAY_OF_MAPS,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.max_elem = 1,
	.inner_id = 2,
};

static __always_inline void count(void)
{
	__u32 key = 0;
	__u64 *val = bpf_map_lookup_elem(&pkt_count, &key);

	if (val)
		__sync_fetch_and_add(val, 1);
}

SEC("classifier")
int cls_entry(struct __sk_buff *skb)
{
	__u32 key = skb->mark & 7;
	__u32 *classid;

	count();
	classid = bpf_map_lookup_elem(&class_map, &key);
	if (!classid)
		return TC_ACT_UNSPEC;
	return *classid;
}

SEC("action")
int act_entry(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (data + 1 > data_end)
		return TC_ACT_OK;
	if (*(unsigned char *)data != 0xff)
		return TC_ACT_OK;
	count();
	return TC_ACT_SHOT;
}

char _license[] SEC("license") = "GPL";
