//go:build ignore

// arena.c tests BPF arenas: pages allocated with bpf_arena_alloc_pages,
// written and read through __arena pointers (address space 1, which clang
// casts to the kernel's with addr_space_cast before each access), and
// freed with bpf_arena_free_pages.
//
// Behaviour (tc, first packet byte b0):
//   arena_peek: returns the u32 at offset 16 of the arena's 4th page
//     (user address 1<<32 + 3 * 4096 + 16), which user space wrote
//     through the map's memory, and adds b0 to it.
//   arena_alloc_free: 8 times allocates two pages and frees them;
//     returns 8. The kernel refuses it (its arena kfuncs are sleepable,
//     and tc programs are not); bpfvm runs it unverified.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define __arena __attribute__((address_space(1)))

// The system's headers predate arenas: the kernel's UAPI values and
// libbpf's __ulong.
#define BPF_MAP_TYPE_ARENA 33
#define __ulong(name, val) enum { ___bpf_concat(__unique_value, __COUNTER__) = val } name

extern void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, __u32 page_cnt, int node_id, __u64 flags) __ksym;
extern void bpf_arena_free_pages(void *map, void __arena *ptr, __u32 page_cnt) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 8);
	__ulong(map_extra, 1ull << 32);
} arena SEC(".maps");

static __u8 first_byte(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;

	if (data + 1 > end)
		return 0;
	return *(__u8 *)data;
}

SEC("tc")
int arena_peek(struct __sk_buff *skb)
{
	// Page 3 of the arena, which user space wrote through its mapping.
	__u32 __arena *p = (__u32 __arena *)((1ull << 32) + 3 * 4096);
	__u32 v;

	// The program's arena: the one it references.
	asm volatile("" ::"r"(&arena));
	v = p[4];
	p[4] = v + first_byte(skb);
	p[1024 * 8] = 1; // past the arena's pages, in its window
	return v;
}

// Unverified only: the kernel's arena kfuncs are sleepable.
SEC("tc")
int arena_alloc_free(struct __sk_buff *skb)
{
	int n = 0;

	for (int i = 0; i < 8; i++) {
		void __arena *p = bpf_arena_alloc_pages(&arena, NULL, 2, -1, 0);

		if (!p)
			break;
		bpf_arena_free_pages(&arena, p, 2);
		n++;
	}
	return n;
}

char _license[] SEC("license") = "GPL";
