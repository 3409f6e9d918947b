//go:build ignore

// loops.c is the loop corpus: constant-bound loops, bpf_for/bpf_repeat over
// the bpf_iter_num kfuncs, may_goto (cond_break) loops, bpf_loop, and
// programs the verifier must reject (a leaked iterator, an iterator used
// before it is created). XDP programs read their argument n from the packet
// after the 14-byte Ethernet header; loops_test.go runs each in the kernel
// and in bpfvm and compares verdicts, return values and packets.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// The open-coded number iterator (kernel/bpf/bpf_iter.c), declared here as
// the selftests' bpf_experimental.h does.
struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

// bpf_for(i, start, end): i runs over [start, end); the iterator is
// destroyed when the loop's scope ends.
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

// bpf_repeat(n): run the body n times.
#define bpf_repeat(n)                                                              \
	for (struct bpf_iter_num ___it __attribute__((aligned(8),                  \
						      cleanup(bpf_iter_num_destroy))), \
	     *___p __attribute__((unused)) =                                       \
		     (bpf_iter_num_new(&___it, 0, (n)),                            \
		      (void)bpf_iter_num_destroy, (void *)0);                      \
	     bpf_iter_num_next(&___it);)

// cond_break leaves the enclosing loop when the may_goto budget is spent.
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

// for_const: a loop with a constant bound, verified by walking it.
SEC("xdp")
int for_const(struct xdp_md *ctx)
{
	ARGS;
	__u64 sum = 0;
	for (int i = 0; i < 64; i++)
		sum += i * (a->n | 1);
	a->out = sum;
	return sum;
}

// for_sum: bpf_for(i, 0, n), summing i.
SEC("xdp")
int for_sum(struct xdp_md *ctx)
{
	ARGS;
	__u64 sum = 0;
	int i;
	bpf_for(i, 0, a->n) sum += i;
	a->out = sum;
	return sum;
}

// for_nested: two nested bpf_for loops.
SEC("xdp")
int for_nested(struct xdp_md *ctx)
{
	ARGS;
	__u64 sum = 0;
	int i, j;
	bpf_for(i, 0, a->n & 63)
	{
		bpf_for(j, 0, i) sum += j ^ i;
	}
	a->out = sum;
	return sum;
}

// for_array: the iterator's value indexes a stack array.
SEC("xdp")
int for_array(struct xdp_md *ctx)
{
	ARGS;
	__u32 arr[16] = {};
	__u64 sum = 0;
	int i;
	bpf_for(i, 0, 16) arr[i] = i * a->n;
	bpf_for(i, 0, 16) sum += arr[i];
	a->out = sum;
	return sum;
}

// repeat: bpf_repeat(n) counting its rounds.
SEC("xdp")
int repeat(struct xdp_md *ctx)
{
	ARGS;
	__u32 cnt = 0;
	bpf_repeat(a->n) cnt++;
	a->out = cnt;
	return cnt;
}

// for_empty: an empty bpf_for loop, for measuring the iterator's cost.
SEC("xdp")
int for_empty(struct xdp_md *ctx)
{
	ARGS;
	int i;
	bpf_for(i, 0, a->n) {}
	return 1;
}

// cond_break_bounded: a loop bounded by n, with cond_break to let the
// verifier accept the unknown bound; n stays below the may_goto budget.
SEC("xdp")
int cond_break_bounded(struct xdp_md *ctx)
{
	ARGS;
	__u64 sum = 0;
	for (__u32 i = 0; i < a->n; i++) {
		sum += i;
		cond_break;
	}
	a->out = sum;
	return sum;
}

// cond_break_count: an empty bounded loop with cond_break, for measuring
// may_goto's cost.
SEC("xdp")
int cond_break_count(struct xdp_md *ctx)
{
	ARGS;
	__u32 i;
	for (i = 0; i < a->n; i++)
		cond_break;
	return i;
}

// forever: while(1) with cond_break; runs until the timed may_goto budget
// ends it and returns the number of rounds.
SEC("xdp")
int forever(struct xdp_md *ctx)
{
	__u32 i = 0;
	while (1) {
		i++;
		cond_break;
	}
	return i;
}

struct loop_ctx {
	__u64 sum;
};

static long loop_cb(__u64 index, void *c)
{
	((struct loop_ctx *)c)->sum += index;
	return 0;
}

// loop_sum: bpf_loop(n) summing the indices.
SEC("xdp")
int loop_sum(struct xdp_md *ctx)
{
	ARGS;
	struct loop_ctx lc = {};
	bpf_loop(a->n, loop_cb, &lc, 0);
	a->out = lc.sum;
	return lc.sum;
}

static long empty_cb(__u64 index, void *c)
{
	return 0;
}

// loop_empty: bpf_loop(n) with an empty callback.
SEC("xdp")
int loop_empty(struct xdp_md *ctx)
{
	ARGS;
	return bpf_loop(a->n, empty_cb, 0, 0);
}

struct cb_ctx {
	__u64 sum;
	__u32 n;
};

static long cond_break_cb(__u64 index, void *c)
{
	struct cb_ctx *cc = c;

	for (__u32 i = 0; i < cc->n; i++) {
		cc->sum += i ^ index;
		cond_break;
	}
	return 0;
}

// cond_break_callback: bpf_loop(8) whose callback loops with cond_break: the
// callback's frame gets its own may_goto countdown on every call.
SEC("xdp")
int cond_break_callback(struct xdp_md *ctx)
{
	ARGS;
	struct cb_ctx cc = {.n = a->n};
	bpf_loop(8, cond_break_cb, &cc, 0);
	a->out = cc.sum;
	return cc.sum;
}

// bad_iter_leak: an iterator that is never destroyed.
SEC("xdp")
int bad_iter_leak(struct xdp_md *ctx)
{
	struct bpf_iter_num it;
	bpf_iter_num_new(&it, 0, 10);
	return 0;
}

// bad_iter_uninit: bpf_iter_num_next on an iterator never created.
SEC("xdp")
int bad_iter_uninit(struct xdp_md *ctx)
{
	struct bpf_iter_num it;
	int *v = bpf_iter_num_next(&it);
	return v ? *v : 0;
}

// bad_iter_deref_null: the value of bpf_iter_num_next may be NULL.
SEC("xdp")
int bad_iter_deref_null(struct xdp_md *ctx)
{
	struct bpf_iter_num it;
	int r;
	bpf_iter_num_new(&it, 0, 10);
	r = *(volatile int *)bpf_iter_num_next(&it);
	bpf_iter_num_destroy(&it);
	return r;
}

char _license[] SEC("license") = "GPL";
