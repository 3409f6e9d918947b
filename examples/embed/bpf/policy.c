// SPDX-License-Identifier: MIT
// policy is an extension program for a host application that bpfvm embeds:
// the host defines the program type (struct request below) and one helper,
// host_audit. The program allows a request unless its path starts with a
// blocked prefix, counting decisions per user class in an array map.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// struct request is the context the host passes in R1. data and data_end
// point at the request path, like packet pointers.
struct request {
	__u32 user_class; // read-only
	__u32 verdict;    // written by the program
	__u64 data;
	__u64 data_end;
};

// host_audit is helper 10000, provided by the host application.
static long (*host_audit)(__u32 user_class, __u32 verdict) = (void *)10000;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} decisions SEC(".maps");

static const char blocked[] = "/admin";

SEC("host/policy")
int policy(struct request *req)
{
	const char *path = (const char *)(long)req->data;
	const char *end = (const char *)(long)req->data_end;
	__u32 verdict = 1, class = req->user_class & 3;
	__u64 *count;

	if (path + sizeof(blocked) - 1 <= end) {
		verdict = 0;
#pragma unroll
		for (int i = 0; i < sizeof(blocked) - 1; i++) {
			if (path[i] != blocked[i]) {
				verdict = 1;
				break;
			}
		}
	}
	if (class == 0) // administrators may go anywhere
		verdict = 1;
	req->verdict = verdict;
	count = bpf_map_lookup_elem(&decisions, &class);
	if (count)
		__sync_fetch_and_add(count, 1);
	host_audit(class, verdict);
	return verdict;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
