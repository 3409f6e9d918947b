//go:build ignore

// map_reuse.c deletes and inserts elements of small maps many times within
// one run, as Cilium's NAT port allocation does: the kernel reuses a
// deleted element at once (its free lists), so every insertion succeeds.
// Each program returns the number of failed updates; stale_ptr keeps a
// pointer to a deleted element's value across the insertion that reuses it,
// which must stay memory-safe (what it reads is the allocator's business).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define ROUNDS 512

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} prealloc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u64);
} noprealloc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} percpu SEC(".maps");

struct lpm_key {
	__u32 prefixlen;
	__u32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_key);
	__type(value, __u64);
} lpm SEC(".maps");

/* One callback per map: the map is a constant, not a pointer in the
 * callback's context. */
#define CHURN(map)                                                        \
	static long churn_##map(__u32 i, __u32 *failed)                   \
	{                                                                 \
		__u32 key = i;                                            \
		__u64 val = i;                                            \
                                                                          \
		if (bpf_map_update_elem(&map, &key, &val, BPF_NOEXIST))   \
			(*failed)++;                                      \
		bpf_map_delete_elem(&map, &key);                          \
		return 0;                                                 \
	}                                                                 \
	static __u32 run_churn_##map(void)                                \
	{                                                                 \
		__u32 failed = 0;                                         \
                                                                          \
		bpf_loop(ROUNDS, churn_##map, &failed, 0);                \
		return failed;                                            \
	}

CHURN(prealloc)
CHURN(noprealloc)
CHURN(percpu)

SEC("xdp")
int hash_churn(struct xdp_md *ctx)
{
	return run_churn_prealloc();
}

SEC("xdp")
int hash_noprealloc_churn(struct xdp_md *ctx)
{
	return run_churn_noprealloc();
}

SEC("xdp")
int percpu_churn(struct xdp_md *ctx)
{
	return run_churn_percpu();
}

/* The map full but for one key, which is replaced ROUNDS times. */
static long replace(__u32 i, __u32 *failed)
{
	__u32 key = 3;
	__u64 val = i;

	if (bpf_map_update_elem(&prealloc, &key, &val, BPF_ANY))
		(*failed)++;
	return 0;
}

SEC("xdp")
int hash_full_replace(struct xdp_md *ctx)
{
	__u32 failed = 0;
	__u64 val = 0;

	for (__u32 k = 0; k < 3; k++) {
		__u32 key = k;

		if (bpf_map_update_elem(&prealloc, &key, &val, BPF_ANY))
			failed++;
	}
	bpf_loop(ROUNDS, replace, &failed, 0);
	for (__u32 k = 0; k < 4; k++) {
		__u32 key = k;

		bpf_map_delete_elem(&prealloc, &key);
	}
	return failed;
}

static long lpm_churn(__u32 i, __u32 *failed)
{
	struct lpm_key key = { .prefixlen = 32, .addr = i };
	__u64 val = i;

	if (bpf_map_update_elem(&lpm, &key, &val, BPF_NOEXIST))
		(*failed)++;
	bpf_map_delete_elem(&lpm, &key);
	return 0;
}

SEC("xdp")
int lpm_reuse(struct xdp_md *ctx)
{
	__u32 failed = 0;

	bpf_loop(ROUNDS, lpm_churn, &failed, 0);
	return failed;
}

/* A pointer to a deleted element's value, written after insertions that
 * may reuse the element: memory-safe in both. Returns the failed updates. */
SEC("xdp")
int stale_ptr(struct xdp_md *ctx)
{
	__u32 key = 1, failed = 0;
	__u64 val = 7, *p;

	if (bpf_map_update_elem(&prealloc, &key, &val, BPF_ANY))
		return 1000;
	p = bpf_map_lookup_elem(&prealloc, &key);
	if (!p)
		return 1001;
	bpf_map_delete_elem(&prealloc, &key);
	failed = run_churn_prealloc();
	*p += 1;
	return failed;
}

char LICENSE[] SEC("license") = "GPL";
