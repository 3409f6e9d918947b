//go:build ignore

// arena_sleep.c tests arenas from syscall programs, which are sleepable
// and so may call the arena's kfuncs (KF_SLEEPABLE since 6.18): pages
// that are not the arena's read 0 and drop writes, before they are
// allocated, after they are freed, and for an access that spills into
// the next page; sign-extending loads and atomic operations through arena
// pointers, on held pages and on pages the arena does not hold (which
// change no register). Each program writes what it saw to its context, a
// struct out, for comparison with the kernel (arena_sleep_test.go).
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

struct out {
	__s64 v[32];
};

// PAGE is page n of the arena.
#define PAGE(n) ((volatile __u64 __arena *)((1ull << 32) + (n) * 4096))

SEC("syscall")
int pages(struct out *ctx)
{
	volatile __u64 __arena *p = PAGE(5);
	volatile __u32 __arena *q = (volatile __u32 __arena *)((volatile char __arena *)p + 4094);
	void __arena *a;

	// The program's arena: the one it references.
	asm volatile("" ::"r"(&arena));
	*p = 42;
	ctx->v[0] = *p;
	a = bpf_arena_alloc_pages(&arena, (void __arena *)p, 1, -1, 0);
	ctx->v[1] = (__u64)a;
	ctx->v[2] = *p;
	*p = 43;
	p[511] = 7;
	ctx->v[3] = *p;
	ctx->v[4] = p[511];
	ctx->v[5] = p[512];
	// Across the end of page 5, into page 6, which is not the arena's.
	*q = 0xffffffff;
	ctx->v[6] = *(volatile __u16 __arena *)((volatile char __arena *)p + 4094);
	ctx->v[7] = *q;
	// The same page again: taken.
	ctx->v[8] = (__u64)bpf_arena_alloc_pages(&arena, (void __arena *)p, 1, -1, 0);
	bpf_arena_free_pages(&arena, (void __arena *)p, 1);
	ctx->v[9] = *p;
	*p = 44;
	ctx->v[10] = *p;
	// Anywhere: the first free pages.
	a = bpf_arena_alloc_pages(&arena, NULL, 3, -1, 0);
	ctx->v[11] = (__u64)a;
	*(volatile __u64 __arena *)a = 45;
	ctx->v[12] = *(volatile __u64 __arena *)a;
	ctx->v[13] = (__u64)bpf_arena_alloc_pages(&arena, NULL, 8, -1, 0);
	bpf_arena_free_pages(&arena, a, 3);
	ctx->v[14] = *(volatile __u64 __arena *)a;
	return 0;
}

// Sign-extending loads, which clang-19 emits only for -mcpu=v4: in
// assembly.
static __s64 lds8(volatile __u64 __arena *p)
{
	__s64 v;

	asm volatile("%[p] = addr_space_cast(%[p], 0, 1)\n"
		     "%[v] = *(s8 *)(%[p] + 0)" : [v] "=r"(v), [p] "+r"(p));
	return v;
}

static __s64 lds16(volatile __u64 __arena *p)
{
	__s64 v;

	asm volatile("%[p] = addr_space_cast(%[p], 0, 1)\n"
		     "%[v] = *(s16 *)(%[p] + 2)" : [v] "=r"(v), [p] "+r"(p));
	return v;
}

static __s64 lds32(volatile __u64 __arena *p)
{
	__s64 v;

	asm volatile("%[p] = addr_space_cast(%[p], 0, 1)\n"
		     "%[v] = *(s32 *)(%[p] + 4)" : [v] "=r"(v), [p] "+r"(p));
	return v;
}

SEC("syscall")
int sx_atomics(struct out *ctx)
{
	volatile __u64 __arena *p = PAGE(2), *none = PAGE(3);
	volatile __u32 __arena *w = (volatile __u32 __arena *)p;

	asm volatile("" ::"r"(&arena));
	bpf_arena_alloc_pages(&arena, (void __arena *)p, 1, -1, 0);
	*p = 0x80000000c0ff80ffull;
	ctx->v[0] = lds8(p);
	ctx->v[1] = lds16(p);
	ctx->v[2] = lds32(p);
	ctx->v[3] = lds8(none);
	ctx->v[4] = lds32(none);
	*p = 0x80ff;
	ctx->v[5] = __sync_fetch_and_add(p, 5);
	ctx->v[6] = *p;
	ctx->v[7] = __sync_fetch_and_add(none, 5);
	ctx->v[8] = __sync_val_compare_and_swap(p, 0x8104, 9);
	ctx->v[9] = *p;
	ctx->v[10] = __sync_val_compare_and_swap(p, 1, 2);
	ctx->v[11] = __sync_val_compare_and_swap(none, 1, 2);
	ctx->v[12] = __sync_lock_test_and_set(p, 11);
	ctx->v[13] = __sync_lock_test_and_set(none, 12);
	__sync_fetch_and_or(p, 0x100);
	__sync_fetch_and_and(p, 0x10f);
	__sync_fetch_and_xor(p, 0x3);
	__sync_fetch_and_add(none, 1);
	ctx->v[14] = *p;
	// The fetching and, or and xor: refused through arena pointers (the
	// kernel's x86-64 JIT cannot handle their faults).
	ctx->v[15] = __sync_lock_test_and_set(none, 13);
	// A 32-bit store into the 64-bit value.
	w[1] = 0x77;
	ctx->v[20] = *p;
	bpf_arena_free_pages(&arena, (void __arena *)p, 1);
	ctx->v[21] = __sync_fetch_and_add(p, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
