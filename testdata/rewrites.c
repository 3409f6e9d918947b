//go:build ignore

// rewrites.c holds programs that combine the rewrites of verified programs:
// inlined map lookups, inlined bpf_loop, the inlined bpf_iter_num_next and
// the timed may_goto, in one function and across subprograms, so that each
// rewrite runs after others moved the code. XDP programs read n from the
// packet after the 14-byte Ethernet header and write their result after it;
// rewrites_test.go compares them with the kernel on both engines, with and
// without inlining.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

#define bpf_for(i, start, end)                                                     \
	for (struct bpf_iter_num ___it __attribute__((aligned(8),                  \
						      cleanup(bpf_iter_num_destroy))), \
	     *___p __attribute__((unused)) =                                       \
		     (bpf_iter_num_new(&___it, (start), (end)),                    \
		      (void)bpf_iter_num_destroy, (void *)0);                      \
	     ({                                                                    \
		     int *___t = bpf_iter_num_next(&___it);                        \
		     (___t && ((i) = *___t, (i) >= (start) && (i) < (end)));       \
	     });)

#define cond_break                                                    \
	({                                                            \
		__label__ l_break, l_continue;                        \
		asm volatile goto("may_goto %l[l_break]" :::: l_break); \
		goto l_continue;                                      \
	l_break:                                                      \
		break;                                                \
	l_continue:;                                                  \
	})

struct args {
	__u32 n;
	__u32 pad;
	__u64 out;
};

#define ARGS                                           \
	void *data = (void *)(long)ctx->data;          \
	void *end = (void *)(long)ctx->data_end;       \
	struct args *a = data + 14;                    \
	if ((void *)(a + 1) > end)                     \
		return 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} hash SEC(".maps");

static long add_index(__u64 i, void *c)
{
	*(__u64 *)c += i + 1;
	return 0;
}

static long add_hundred(__u64 i, void *c)
{
	*(__u64 *)c += 100;
	return 0;
}

// lookup_then_loop: an array lookup (inlined: the code grows), then
// bpf_loop(n, add_index): n(n+1)/2 plus the array's element 0.
SEC("xdp")
int lookup_then_loop(struct xdp_md *ctx)
{
	ARGS;
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&arr, &k);
	__u64 sum = v ? *v : 7;
	bpf_loop(a->n & 1023, add_index, &sum, 0);
	a->out = sum;
	return sum;
}

// two_loops: bpf_loop(2, add_index) then bpf_loop(2, add_hundred): 3 + 200,
// plus the result of both calls (2 + 2).
SEC("xdp")
int two_loops(struct xdp_md *ctx)
{
	ARGS;
	__u64 sum = 0;
	long r = bpf_loop(2, add_index, &sum, 0);
	r += bpf_loop(2, add_hundred, &sum, 0);
	a->out = sum;
	return sum + r;
}

static __attribute__((noinline)) __u64 sub_loop(__u32 n, __u32 key)
{
	__u64 *v = bpf_map_lookup_elem(&hash, &key);
	__u64 sum = v ? *v : 0;
	bpf_loop(n, add_index, &sum, 0);
	bpf_loop(n, add_hundred, &sum, 0);
	return sum;
}

static __attribute__((noinline)) __u64 sub_lookup(__u32 key)
{
	__u64 *v = bpf_map_lookup_elem(&arr, &key);
	return v ? *v + 5 : 11;
}

// loops_in_subprogs: bpf_loop in a subprogram called twice, with lookups
// before it in the caller and in another subprogram placed after it.
SEC("xdp")
int loops_in_subprogs(struct xdp_md *ctx)
{
	ARGS;
	__u32 n = a->n & 255;
	__u64 sum = sub_lookup(1);
	sum += sub_loop(n, 1);
	sum += sub_lookup(2) * 3;
	sum += sub_loop(n / 2, 2);
	a->out = sum;
	return sum;
}

// all_together: an array lookup, bpf_loop, a bpf_for loop and a may_goto
// loop, in the program and in a subprogram.
static __attribute__((noinline)) __u64 sub_all(__u32 n)
{
	__u64 sum = 0;
	int i;

	bpf_loop(n, add_hundred, &sum, 0);
	bpf_for(i, 0, n) sum += i;
	for (__u32 j = 0; j < n; j++) {
		cond_break;
		sum += 3;
	}
	return sum;
}

SEC("xdp")
int all_together(struct xdp_md *ctx)
{
	ARGS;
	__u32 n = a->n & 511;
	__u32 k = 3;
	__u64 *v = bpf_map_lookup_elem(&arr, &k);
	__u64 sum = v ? *v + 1 : 2;
	int i;

	bpf_loop(n, add_index, &sum, 0);
	bpf_for(i, 0, n) sum += 2 * i;
	for (__u32 j = 0; j < n; j++) {
		cond_break;
		sum += 5;
	}
	sum += sub_all(n) * 7;
	bpf_loop(n, add_hundred, &sum, 0);
	a->out = sum;
	return sum;
}

static long add_one(__u64 i, void *c)
{
	*(__u64 *)c += 1;
	return 0;
}

static long loop_in_callback(__u64 i, void *c)
{
	bpf_loop(3, add_one, c, 0);
	*(__u64 *)c += 10;
	return 0;
}

static long may_goto_in_callback(__u64 i, void *c)
{
	for (__u32 j = 0; j < 4; j++) {
		cond_break;
		*(__u64 *)c += 1000;
	}
	return 0;
}

// nested_loops: bpf_loop whose callback calls bpf_loop, and one whose
// callback has a may_goto loop (a prologue the inlined call must enter),
// after an array lookup: n * 13 + 8000 + the array's element 1.
SEC("xdp")
int nested_loops(struct xdp_md *ctx)
{
	ARGS;
	__u32 k = 1;
	__u64 *v = bpf_map_lookup_elem(&arr, &k);
	__u64 sum = v ? *v : 3;

	bpf_loop(a->n & 63, loop_in_callback, &sum, 0);
	bpf_loop(2, may_goto_in_callback, &sum, 0);
	a->out = sum;
	return sum;
}

char _license[] SEC("license") = "GPL";
