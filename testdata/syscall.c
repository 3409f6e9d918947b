// syscall.c: BPF_PROG_TYPE_SYSCALL programs, run with BPF_PROG_TEST_RUN
// on a buffer of the caller's that the run copies back: the context
// itself, bpf() and close() from BPF, BTF and symbol lookups, user
// memory read by sleepable helpers and kfuncs (syscall_test.go).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern int bpf_copy_from_user_str(void *dst, __u32 dst__sz, const void *unsafe_ptr__ign, __u64 flags) __ksym;

struct args {
	__u64 a;
	__u32 b;
	__s32 ret[11];
	__u64 res[4];
	__u64 user;	// a user address with 16 bytes
	__u64 str;	// a user address with a string
	char name[32];	// a symbol to look up, NUL-terminated
	char buf[16];
	char sbuf[8];
	char sbuf2[24];
};

// ctx_rw reads and writes the caller's buffer.
SEC("syscall")
int ctx_rw(struct args *ctx)
{
	ctx->a += 1;
	ctx->b *= 2;
	ctx->buf[3] = 'x';
	return ctx->b + 1;
}

// Attributes of bpf() commands: a union bpf_attr and more.
static char attr[176];

// sys_calls issues bpf() commands and close() for objects that do not
// exist: the kernel's errors.
SEC("syscall")
int sys_calls(struct args *ctx)
{
	union bpf_attr *a = (void *)attr;

	__builtin_memset(attr, 0, sizeof(attr));
	a->map_fd = 100000;
	ctx->ret[0] = bpf_sys_bpf(BPF_MAP_UPDATE_ELEM, attr, sizeof(union bpf_attr));
	ctx->ret[1] = bpf_sys_bpf(BPF_MAP_DELETE_ELEM, attr, sizeof(union bpf_attr));
	ctx->ret[2] = bpf_sys_bpf(BPF_MAP_FREEZE, attr, sizeof(union bpf_attr));
	// Not a command programs may issue.
	ctx->ret[3] = bpf_sys_bpf(BPF_PROG_GET_NEXT_ID, attr, sizeof(union bpf_attr));
	ctx->ret[4] = bpf_sys_bpf(BPF_LINK_CREATE, attr, sizeof(union bpf_attr));
	ctx->ret[5] = bpf_sys_close(100000);
	a->map_fd = 0x7ffffff0;
	ctx->ret[6] = bpf_sys_bpf(BPF_MAP_GET_FD_BY_ID, attr, sizeof(union bpf_attr));
	// Past union bpf_attr: zero, then not.
	a->map_fd = 100000;
	ctx->ret[7] = bpf_sys_bpf(BPF_MAP_UPDATE_ELEM, attr, sizeof(attr));
	attr[sizeof(attr) - 1] = 1;
	ctx->ret[8] = bpf_sys_bpf(BPF_MAP_UPDATE_ELEM, attr, sizeof(attr));
	attr[sizeof(attr) - 1] = 0;
	// Past BPF_MAP_FREEZE's map_fd.
	attr[8] = 1;
	ctx->ret[9] = bpf_sys_bpf(BPF_MAP_FREEZE, attr, sizeof(union bpf_attr));
	__builtin_memset(attr, 0, sizeof(attr));
	a->raw_tracepoint.prog_fd = 100000;
	ctx->ret[10] = bpf_sys_bpf(BPF_RAW_TRACEPOINT_OPEN, attr, 16);
	return 0;
}

// lookups looks up ctx->name in the symbol table and the kernel's BTF.
// Helpers take no context memory: the name and results go through the
// stack.
SEC("syscall")
int lookups(struct args *ctx)
{
	char bad[4] = "abc";
	char name[32];
	__u64 res = 0;

	__builtin_memcpy(name, ctx->name, sizeof(name));
	ctx->ret[0] = bpf_kallsyms_lookup_name(name, sizeof(name), 0, &res);
	ctx->res[0] = res;
	res = 7;
	ctx->ret[1] = bpf_kallsyms_lookup_name(name, sizeof(name), 1, &res);
	ctx->res[1] = res;
	ctx->ret[2] = bpf_kallsyms_lookup_name(bad, 3, 0, &res);
	ctx->res[2] = res;
	ctx->res[3] = bpf_btf_find_by_name_kind(name, sizeof(name), ctx->b, 0);
	ctx->ret[3] = bpf_btf_find_by_name_kind(name, sizeof(name), ctx->b, 1);
	ctx->ret[4] = bpf_btf_find_by_name_kind(bad, 3, ctx->b, 0);
	return 0;
}

// user_mem reads the caller's memory at ctx->user and ctx->str.
SEC("syscall")
int user_mem(struct args *ctx)
{
	char buf[16], sbuf[8], sbuf2[24];

	__builtin_memset(sbuf, 'y', sizeof(sbuf));
	__builtin_memset(sbuf2, 'z', sizeof(sbuf2));
	ctx->ret[0] = bpf_copy_from_user(buf, sizeof(buf), (void *)ctx->user);
	__builtin_memcpy(ctx->buf, buf, sizeof(buf));
	ctx->ret[1] = bpf_copy_from_user_str(sbuf, sizeof(sbuf), (void *)ctx->str, 0);
	__builtin_memcpy(ctx->sbuf, sbuf, sizeof(sbuf));
	ctx->ret[2] = bpf_copy_from_user_str(sbuf2, sizeof(sbuf2), (void *)ctx->str, 1 /* BPF_F_PAD_ZEROS */);
	ctx->ret[3] = bpf_copy_from_user_str(sbuf2, sizeof(sbuf2), (void *)ctx->str, 2);
	ctx->ret[4] = bpf_copy_from_user_str(sbuf2, 0, (void *)ctx->str, 0);
	__builtin_memcpy(ctx->sbuf2, sbuf2, sizeof(sbuf2));
	ctx->ret[5] = bpf_copy_from_user_str(sbuf2, sizeof(sbuf2), (void *)0x10, 0);
	ctx->ret[6] = bpf_copy_from_user_str(sbuf2, sizeof(sbuf2), (void *)0x10, 1);
	ctx->ret[7] = sbuf2[0] | sbuf2[23];
	return ctx->ret[0];
}

char LICENSE[] SEC("license") = "GPL";
