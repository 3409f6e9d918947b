//go:build ignore

// btf_maps.c tests BTF-defined maps in SEC(".maps"): an array, a hash and a
// per-CPU array, looked up with null checks and updated atomically.
//
// Behaviour: counts packets by their first byte.
//   - counters (ARRAY, 4 entries, u32 -> u64): slot (first byte & 3) is
//     incremented with __sync_fetch_and_add.
//   - bytes (PERCPU_ARRAY, 1 entry, u32 -> u64): slot 0 accumulates the
//     packet length.
//   - seen (HASH, 64 entries, u32 -> u64): key first byte, value incremented;
//     inserted with value 1 when missing.
// Returns XDP_PASS (2), or XDP_ABORTED (0) for an empty packet.
//
// Expected: for the 14-byte packet 05 aa bb 00 .. 00 on empty maps the
// program returns 2 and leaves counters[1] = 1 (others 0), bytes[0] = 14 on
// the running CPU, seen = {5: 1}.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bytes SEC(".maps");

SEC("xdp")
int btf_maps_entry(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key, zero = 0;
	__u64 *val, one = 1;
	unsigned char first;

	if (data + 1 > data_end)
		return XDP_ABORTED;
	first = *(unsigned char *)data;

	key = first & 3;
	val = bpf_map_lookup_elem(&counters, &key);
	if (val)
		__sync_fetch_and_add(val, 1);

	val = bpf_map_lookup_elem(&bytes, &zero);
	if (val)
		*val += data_end - data;

	key = first;
	val = bpf_map_lookup_elem(&seen, &key);
	if (val)
		__sync_fetch_and_add(val, 1);
	else
		bpf_map_update_elem(&seen, &key, &one, BPF_NOEXIST);

	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
