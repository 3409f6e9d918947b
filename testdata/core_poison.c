// core_poison.c: CO-RE relocations the target cannot satisfy, reached:
// the poisoned instructions the verifier rejects, with the kernel's
// message (core_test.go). The local types are core.c's.
#include "core.h"

// core_poison_field: an unguarded access to a missing field: the poisoned
// call is reached, "invalid func unknown#195896080".
SEC("socket")
int core_poison_field(struct __sk_buff *skb)
{
	__u64 buf[8] = {};
	struct task_struct___core *t = (void *)buf;

	asm volatile("" : : "r"(t) : "memory");
	return t->no_such_field;
}

// core_poison_enum: the value of a missing enumerator, an LD_IMM64: the
// poisoned load writes r10, "frame pointer is read only".
SEC("socket")
int core_poison_enum(struct __sk_buff *skb)
{
	return bpf_core_enum_value(enum xdp_action___core, XDP_NO_SUCH___core);
}

char _license[] SEC("license") = "GPL";
