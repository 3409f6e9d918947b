//go:build ignore

// iter_maps.c: map iterators. dump_map (iter/bpf_map) prints each map's
// name, type and sizes; dump_elem (iter/bpf_map_elem) prints each element
// of a map with u32 keys and u64 values as "key: value", adds 1 to the
// value through its writable buffer, and at the end (the run with NULL
// buffers) the map name and the last seq_num; key_past (iter/bpf_map_elem) reads 8 bytes of
// the key, which an attach to a map of 4-byte keys refuses. The local
// structs are vmlinux.h-free, relocated with CO-RE against the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
	__u64 session_id;
	__u64 seq_num;
} __attribute__((preserve_access_index));

struct bpf_map {
	char name[16];
	enum bpf_map_type map_type;
	__u32 key_size;
	__u32 value_size;
	__u32 max_entries;
} __attribute__((preserve_access_index));

struct bpf_iter__bpf_map {
	struct bpf_iter_meta *meta;
	struct bpf_map *map;
} __attribute__((preserve_access_index));

struct bpf_iter__bpf_map_elem {
	struct bpf_iter_meta *meta;
	struct bpf_map *map;
	void *key;
	void *value;
} __attribute__((preserve_access_index));

SEC("iter/bpf_map")
int dump_map(struct bpf_iter__bpf_map *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct bpf_map *map = ctx->map;

	if (!map)
		return 0;
	BPF_SEQ_PRINTF(seq, "%s type %u key %u value %u max %u\n", map->name, map->map_type, map->key_size, map->value_size, map->max_entries);
	return 0;
}

SEC("iter/bpf_map_elem")
int dump_elem(struct bpf_iter__bpf_map_elem *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	__u32 *key = ctx->key;
	__u64 *value = ctx->value;

	if (!key || !value) {
		BPF_SEQ_PRINTF(seq, "%s end %llu\n", ctx->map->name, ctx->meta->seq_num);
		return 0;
	}
	BPF_SEQ_PRINTF(seq, "%u: %llu\n", *key, *value);
	*value += 1;
	return 0;
}

SEC("iter/bpf_map_elem")
int key_past(struct bpf_iter__bpf_map_elem *ctx)
{
	__u64 *key = ctx->key;

	if (key)
		bpf_seq_write(ctx->meta->seq, key, 8);
	return 0;
}

char _license[] SEC("license") = "GPL";
