//go:build ignore

// map_fields.c: a map whose value has special fields (a struct
// bpf_spin_lock, a referenced __kptr and a __kptr_untrusted), and programs
// touching them or taking the lock that the kernel accepts or rejects
// (map_fields_test.go).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

// The installed libbpf predates the kptr_untrusted tag.
#define __kptr_untrusted __attribute__((btf_type_tag("kptr_untrusted")))

// The kernel finds task_struct by name in vmlinux: only its name matters,
// but it must be a struct, not a forward declaration, which is what clang
// emits for a struct only pointed to (the variable below makes it complete).
struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

struct task_struct complete_task;

struct val {
	struct bpf_spin_lock lock;
	__u32 pad;
	struct task_struct __kptr_untrusted *untrusted;
	struct task_struct __kptr *ref;
	__u64 counter;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct val);
} vals SEC(".maps");

static struct val *value(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&vals, &k);
}

// Accepted: the plain fields.
SEC("xdp")
int count(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	v->counter++;
	v->pad = 7;
	return XDP_PASS;
}

// Accepted: NULL into an untrusted kptr.
SEC("xdp")
int clear_untrusted(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	v->untrusted = 0;
	return XDP_PASS;
}

// Rejected: bpf_spin_lock cannot be accessed directly by load/store.
SEC("xdp")
int read_lock(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	return *(volatile __u32 *)&v->lock;
}

// Rejected: bpf_spin_lock cannot be accessed directly by load/store.
SEC("xdp")
int write_lock(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	*(volatile __u32 *)&v->lock = 0;
	return XDP_PASS;
}

// Rejected: store to referenced kptr disallowed.
SEC("xdp")
int store_ref(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	v->ref = 0;
	return XDP_PASS;
}

// Rejected: kptr access size must be BPF_DW.
SEC("xdp")
int half_kptr(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	return *(volatile __u32 *)&v->untrusted;
}

// Rejected: the value passed to bpf_map_update_elem holds the lock.
SEC("xdp")
int update_from_value(struct xdp_md *ctx)
{
	__u32 k = 0;
	struct val *v = bpf_map_lookup_elem(&vals, &k);
	if (!v)
		return XDP_ABORTED;
	bpf_map_update_elem(&vals, &k, v, 0);
	return XDP_PASS;
}

// Accepted: the load gives an untrusted PTR_TO_BTF_ID that may be NULL.
SEC("xdp")
int load_untrusted(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	return v->untrusted != 0;
}

// pid_of reads a task's pid after its null check (XDP_DROP for NULL).
static __always_inline int pid_of(struct task_struct *t)
{
	return t ? t->pid : XDP_DROP;
}

// Accepted: an untrusted kptr, dereferenced after its null check (a probe
// load, of a NULL the map holds).
SEC("xdp")
int deref_untrusted(struct xdp_md *ctx)
{
	struct val *v = value();

	return v ? pid_of(v->untrusted) : XDP_ABORTED;
}

// Accepted: a referenced kptr of task_struct loads as an RCU pointer.
SEC("xdp")
int deref_ref(struct xdp_md *ctx)
{
	struct val *v = value();

	return v ? pid_of(v->ref) : XDP_ABORTED;
}

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

// Accepted: an untrusted pointer (bpf_rdonly_cast of a stack slot) stored
// into the untrusted kptr, loaded back and read through, then cleared.
SEC("xdp")
int store_untrusted(struct xdp_md *ctx)
{
	volatile __u64 word = 0x1122334455667788;
	struct val *v = value();
	struct task_struct *t;
	__u64 got;

	if (!v)
		return XDP_ABORTED;
	v->untrusted = bpf_rdonly_cast((void *)&word, bpf_core_type_id_kernel(struct task_struct));
	// Read back from the map, not the register stored.
	t = *(struct task_struct *volatile *)&v->untrusted;
	if (!t)
		return XDP_ABORTED;
	got = *(volatile __u64 *)t;
	v->untrusted = 0;
	return got == 0x1122334455667788 ? XDP_PASS : XDP_DROP;
}

// Accepted: the counter under the value's lock.
SEC("xdp")
int locked_count(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	bpf_spin_lock(&v->lock);
	v->counter++;
	bpf_spin_unlock(&v->lock);
	return XDP_PASS;
}

// Rejected: BPF_EXIT instruction in main prog cannot be used inside
// bpf_spin_lock-ed region.
SEC("xdp")
int exit_locked(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	bpf_spin_lock(&v->lock);
	if (v->counter > 3)
		return XDP_DROP;
	bpf_spin_unlock(&v->lock);
	return XDP_PASS;
}

// Rejected: function calls are not allowed while holding a lock.
SEC("xdp")
int call_locked(struct xdp_md *ctx)
{
	struct val *v = value();
	if (!v)
		return XDP_ABORTED;
	bpf_spin_lock(&v->lock);
	v->counter = bpf_get_prandom_u32();
	bpf_spin_unlock(&v->lock);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
