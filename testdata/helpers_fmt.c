//go:build ignore

// helpers_fmt.c exercises bpf_strtol, bpf_strtoul, bpf_snprintf,
// bpf_trace_printk and bpf_trace_vprintk. XDP programs read their
// arguments from the packet after the 14-byte Ethernet header and write
// results back into the packet; the tests compare both with the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define ARGS(type)                                             \
	void *data = (void *)(long)ctx->data;                  \
	void *end = (void *)(long)ctx->data_end;               \
	type *a = data + 14;                                   \
	if ((void *)(a + 1) > end)                             \
		return -1;

struct strto_args {
	__u32 flags;
	__u32 len;     // (len & 31) + 1 bytes of str are parsed
	__u32 sign;    // 0: bpf_strtoul, else bpf_strtol
	__u32 pad;
	__u64 res;     // out
	char str[32];
};

// strto: bpf_strtol or bpf_strtoul on the string in the packet (copied to
// the stack); writes the result value and returns the helper's result.
SEC("xdp")
int strto(struct xdp_md *ctx)
{
	ARGS(struct strto_args);
	char buf[32];
	__u64 res = 0xdeadbeef;
	__u32 len = (a->len & 31) + 1;
	long ret;

	__builtin_memcpy(buf, a->str, sizeof(buf));
	if (a->sign)
		ret = bpf_strtol(buf, len, a->flags, (long *)&res);
	else
		ret = bpf_strtoul(buf, len, a->flags, (unsigned long *)&res);
	a->res = res;
	return ret;
}

struct fmt_args {
	__u32 sel;   // which format
	__u32 size;  // output size, at most 64
	__u64 arg[4];
	char str[16]; // the string %s prints
	char out[64];
};

// fmt: bpf_snprintf into the packet's out with format sel and the
// arguments arg[0..3] (an argument of -1 stands for the address of str).
SEC("xdp")
int fmt(struct xdp_md *ctx)
{
	ARGS(struct fmt_args);
	static const char f0[] = "%d %u %x %X";
	static const char f1[] = "|%5d|%-5d|%05d|%+d|";
	static const char f2[] = "% d %ld %lu %lx";
	static const char f3[] = "%lld %llu %llx %lli";
	static const char f4[] = "[%s] [%8s] [%-8s] %c";
	static const char f5[] = "%pI4 %pi4 %pI6 %pi6";
	static const char f6[] = "100%% %px %i";
	static const char f7[] = "%pks|%s";
	char str[16], out[64] = {};
	__u64 args[4];
	__u32 size = a->size;
	long ret;

	__builtin_memcpy(str, a->str, sizeof(str));
	str[15] = 0;
	for (int i = 0; i < 4; i++)
		args[i] = a->arg[i] == (__u64)-1 ? (__u64)(long)str : a->arg[i];
	if (size > sizeof(out))
		return -1;
	switch (a->sel) {
	case 0: ret = bpf_snprintf(out, size, f0, args, 32); break;
	case 1: ret = bpf_snprintf(out, size, f1, args, 32); break;
	case 2: ret = bpf_snprintf(out, size, f2, args, 32); break;
	case 3: ret = bpf_snprintf(out, size, f3, args, 32); break;
	case 4: ret = bpf_snprintf(out, size, f4, args, 32); break;
	case 5: ret = bpf_snprintf(out, size, f5, args, 32); break;
	case 6: ret = bpf_snprintf(out, size, f6, args, 32); break;
	case 7: ret = bpf_snprintf(out, size, f7, args, 32); break;
	default: return -2;
	}
	__builtin_memcpy(a->out, out, sizeof(out));
	return ret;
}

// printk: bpf_trace_printk with format sel and arguments arg[0..2] (8:
// bpf_trace_vprintk with five arguments); returns the helper's result.
// Formats 2, 5, 6 and 7 are invalid at run time.
SEC("xdp")
int printk(struct xdp_md *ctx)
{
	ARGS(struct fmt_args);
	char str[16];
	__u64 args[3];

	__builtin_memcpy(str, a->str, sizeof(str));
	str[15] = 0;
	for (int i = 0; i < 3; i++)
		args[i] = a->arg[i] == (__u64)-1 ? (__u64)(long)str : a->arg[i];
	switch (a->sel) {
	case 0: {
		static const char f[] = "hello %d %s\n";
		return bpf_trace_printk(f, sizeof(f), args[0], args[1]);
	}
	case 1: {
		static const char f[] = "no newline %x";
		return bpf_trace_printk(f, sizeof(f), args[0]);
	}
	case 2: {
		static const char f[] = "%d %d %d %d";
		return bpf_trace_printk(f, sizeof(f), args[0], args[1], args[2]);
	}
	case 3: {
		static const char f[] = "tab\tok %llx";
		return bpf_trace_printk(f, sizeof(f), args[0]);
	}
	case 4: {
		static const char f[] = "%lld %u %lu";
		return bpf_trace_printk(f, sizeof(f), args[0], args[1], args[2]);
	}
	case 5: {
		static const char f[] = "bad \x01";
		return bpf_trace_printk(f, sizeof(f));
	}
	case 6: {
		static const char f[] = "%q";
		return bpf_trace_printk(f, sizeof(f), args[0]);
	}
	case 7: {
		static const char f[] = "%sx";
		return bpf_trace_printk(f, sizeof(f), args[0]);
	}
	case 8: {
		__u64 vargs[5] = {1, 2, 3, 4, 5};
		static const char f[] = "v %d %d %d %d %d";
		return bpf_trace_vprintk(f, sizeof(f), vargs, sizeof(vargs));
	}
	}
	return -2;
}

char _license[] SEC("license") = "GPL";
