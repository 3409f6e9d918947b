// core.h: the local types of core.c and core_poison.c, declared
// vmlinux.h-free with preserve_access_index: only the fields used, at
// local offsets that differ from the kernel's on purpose.
#ifndef CORE_H
#define CORE_H
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct task_struct___core {
	int tgid;
	int pid;
	char comm[16];
	void *mm;
	long no_such_field;
} __attribute__((preserve_access_index));

struct iphdr___core {
	unsigned char version : 4, ihl : 4;
	unsigned char protocol;
	unsigned char ttl;
	unsigned short tot_len;
	unsigned char tos;
} __attribute__((preserve_access_index));

struct no_such_type___core {
	int x;
} __attribute__((preserve_access_index));

enum xdp_action___core {
	XDP_PASS___core = 7,
	XDP_REDIRECT___core = 9,
	XDP_NO_SUCH___core = 1,
};

// The field kinds the builtin has no libbpf macro for.
#define field_info(type, field, kind) \
	__builtin_preserve_field_info(((type *)0)->field, kind)

// Mix folds a relocated value into the result so that none is dead.
#define mix(acc, v) ((acc) = (acc) * 31 + (__u64)(v))

#endif
