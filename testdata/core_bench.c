// core_bench.c: 1,000 CO-RE relocations in one program, for BenchmarkCORE:
// the offset, size, existence and signedness of each of 250 fields. Not
// meant to run (the result is a sum of constants).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define R10(F_, p) F_(p##0) F_(p##1) F_(p##2) F_(p##3) F_(p##4) F_(p##5) F_(p##6) F_(p##7) F_(p##8) F_(p##9)
#define FIELDS(F_)                                                              \
	R10(F_, a) R10(F_, b) R10(F_, c) R10(F_, d) R10(F_, e) R10(F_, f) R10(F_, g) \
	R10(F_, h) R10(F_, i) R10(F_, j) R10(F_, k) R10(F_, l) R10(F_, m) R10(F_, n) \
	R10(F_, o) R10(F_, p) R10(F_, q) R10(F_, r) R10(F_, s) R10(F_, t) R10(F_, u) \
	R10(F_, v) R10(F_, w) R10(F_, x) R10(F_, y)

#define DECLARE(name) int name;
struct bench___core {
	FIELDS(DECLARE)
} __attribute__((preserve_access_index));

#define SIGNED(name) \
	__builtin_preserve_field_info(((struct bench___core *)0)->name, BPF_FIELD_SIGNED)
#define SUM(name)                                                  \
	acc = acc * 3 + bpf_core_field_offset(struct bench___core, name); \
	acc = acc * 3 + bpf_core_field_size(struct bench___core, name);   \
	acc = acc * 3 + bpf_core_field_exists(struct bench___core, name); \
	acc = acc * 3 + SIGNED(name);

SEC("socket")
int core_bench(struct __sk_buff *skb)
{
	__u64 acc = 0;
	FIELDS(SUM)
	return acc;
}

char _license[] SEC("license") = "GPL";
