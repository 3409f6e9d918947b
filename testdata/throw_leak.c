//go:build ignore

// throw_leak.c holds a ring buffer sample across a call of a global
// function that may throw, which the kernel refuses ("bpf_throw would lead
// to reference leak") as nothing would release the sample. Unverified,
// bpfvm runs it and discards the sample when the throw unwinds the run.
//
// Behaviour (tc, first packet byte b0): reserves a sample; when b0 is odd
// the global function throws b0 + 1000 (the run returns that, the default
// callback's result); otherwise the sample is submitted and it returns 2.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern void bpf_throw(__u64 cookie) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

__noinline int odd_throws(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u8 b0;

	if (data + 1 > end)
		return 0;
	b0 = *(__u8 *)data;
	if (b0 & 1)
		bpf_throw(b0 + 1000);
	return b0;
}

SEC("tc")
int throw_ringbuf(struct __sk_buff *skb)
{
	__u64 *s = bpf_ringbuf_reserve(&events, 8, 0);

	if (!s)
		return 0;
	*s = 1;
	if (odd_throws(skb) & 1) {
		bpf_ringbuf_discard(s, 0);
		return 1;
	}
	bpf_ringbuf_submit(s, 0);
	return 2;
}

char _license[] SEC("license") = "GPL";
