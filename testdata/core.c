// core.c: CO-RE relocations of every kind, relocated against the target
// BTF (the host's vmlinux, the shipped types, or hand-built specs with
// other layouts, see core_test.go) and compared with cilium/ebpf loading
// the same object into the kernel. The local types are in core.h.
//
// Every program loads against the host's vmlinux (libbpf's bpftool loads
// the whole object, see TestCORELibbpf); core_poison.c has the ones that
// do not.
//
// The programs are socket filters that use no context, maps or helpers
// (but core_read), so that the kernel keeps their instructions as they
// are (its xlated program equals the relocated one) and a test run returns
// what the relocations computed.
#include "core.h"

// core_consts: field byte offset, size, existence, signedness and bitfield
// shifts, type ids, existence, size and match, enum value existence and
// value, each an immediate the relocation rewrites.
SEC("socket")
int core_consts(struct __sk_buff *skb)
{
	__u64 acc = 0;
	mix(acc, bpf_core_field_offset(struct task_struct___core, pid));
	mix(acc, bpf_core_field_offset(struct task_struct___core, comm));
	mix(acc, bpf_core_field_offset(struct task_struct___core, mm));
	mix(acc, bpf_core_field_size(struct task_struct___core, comm));
	mix(acc, bpf_core_field_size(struct task_struct___core, tgid));
	mix(acc, bpf_core_field_exists(struct task_struct___core, pid));
	mix(acc, bpf_core_field_exists(struct task_struct___core, no_such_field));
	mix(acc, field_info(struct task_struct___core, pid, BPF_FIELD_SIGNED));
	mix(acc, field_info(struct iphdr___core, ttl, BPF_FIELD_SIGNED));
	mix(acc, field_info(struct iphdr___core, ihl, BPF_FIELD_BYTE_OFFSET));
	mix(acc, field_info(struct iphdr___core, ihl, BPF_FIELD_BYTE_SIZE));
	mix(acc, field_info(struct iphdr___core, ihl, BPF_FIELD_LSHIFT_U64));
	mix(acc, field_info(struct iphdr___core, ihl, BPF_FIELD_RSHIFT_U64));
	mix(acc, field_info(struct iphdr___core, version, BPF_FIELD_LSHIFT_U64));
	mix(acc, field_info(struct iphdr___core, version, BPF_FIELD_RSHIFT_U64));
	mix(acc, bpf_core_type_exists(struct task_struct___core));
	mix(acc, bpf_core_type_exists(struct no_such_type___core));
	mix(acc, bpf_core_type_size(struct iphdr___core));
	mix(acc, bpf_core_type_matches(struct iphdr___core));
	mix(acc, bpf_core_type_matches(enum xdp_action___core));
	mix(acc, bpf_core_type_id_kernel(struct iphdr___core));
	mix(acc, bpf_core_type_id_local(struct iphdr___core));
	mix(acc, bpf_core_enum_value_exists(enum xdp_action___core, XDP_PASS___core));
	mix(acc, bpf_core_enum_value_exists(enum xdp_action___core, XDP_NO_SUCH___core));
	mix(acc, bpf_core_enum_value(enum xdp_action___core, XDP_PASS___core));
	mix(acc, bpf_core_enum_value(enum xdp_action___core, XDP_REDIRECT___core));
	return acc ^ (acc >> 32);
}

// core_access: loads and stores whose offsets are relocated, through a
// stack buffer laid out as the target's iphdr.
SEC("socket")
int core_access(struct __sk_buff *skb)
{
	__u64 buf[8] = {};
	struct iphdr___core *ip = (void *)buf;

	ip->ttl = 64;
	ip->protocol = 6;
	ip->tot_len = 1500;
	asm volatile("" : : "r"(ip) : "memory");
	return ip->ttl + ip->protocol * 256 + ip->tot_len * 65536 + buf[1];
}

// core_bitfield: BPF_CORE_READ_BITFIELD, whose byte size and shifts are
// relocated, on a stack buffer.
SEC("socket")
int core_bitfield(struct __sk_buff *skb)
{
	__u64 buf[8] = {0x4586};
	struct iphdr___core *ip = (void *)buf;

	asm volatile("" : : "r"(ip) : "memory");
	return BPF_CORE_READ_BITFIELD(ip, ihl) * 16 + BPF_CORE_READ_BITFIELD(ip, version);
}

// core_read: BPF_CORE_READ chains through bpf_probe_read_kernel (the
// field offsets are relocated adds before each call).
SEC("socket")
int core_read(struct __sk_buff *skb)
{
	struct task_struct___core *t = (void *)skb;

	return BPF_CORE_READ(t, pid) + (long)BPF_CORE_READ(t, mm);
}

// core_guarded: the access to a field the target lacks is poisoned, but
// behind bpf_core_field_exists, false for the target, so it is dead code
// and the program loads.
SEC("socket")
int core_guarded(struct __sk_buff *skb)
{
	__u64 buf[8] = {};
	struct task_struct___core *t = (void *)buf;

	asm volatile("" : : "r"(t) : "memory");
	if (bpf_core_field_exists(t->no_such_field))
		return t->no_such_field;
	if (bpf_core_type_exists(struct no_such_type___core))
		return bpf_core_type_size(struct no_such_type___core);
	return 42;
}

// core_subprog: relocations in a static and in a global subprogram, which
// cilium/ebpf appends to the program with their relocation records.
static __noinline int tgid_offset(void)
{
	return bpf_core_field_offset(struct task_struct___core, tgid);
}

__noinline int ttl_offset_global(int x)
{
	return x + bpf_core_field_offset(struct iphdr___core, ttl);
}

SEC("socket")
int core_subprog(struct __sk_buff *skb)
{
	return tgid_offset() * 1000 + ttl_offset_global(1);
}

char _license[] SEC("license") = "GPL";
