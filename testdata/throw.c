//go:build ignore

// throw.c tests BPF exceptions: bpf_throw(cookie) unwinds every frame and
// the program returns what its exception callback (named by the main
// function's decl tag exception_callback:<name>, a global function taking
// the cookie) returns, or the cookie itself without one.
//
// Behaviour (tc, on a packet of len bytes whose first byte is b0):
//   throw_cb: len > 100 throws len from three static frames deep; the
//     callback returns cookie * 2 + 1; otherwise 7. len 120: 241.
//   throw_default: len > 50 throws 3 (returned as is); otherwise 1.
//   throw_global: a global function throws b0 + 1000 when b0 is odd,
//     the callback returns cookie - 1000 + 40; otherwise b0. b0 = 5: 45.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern void bpf_throw(__u64 cookie) __ksym;

// As the kernel selftests' bpf_experimental.h defines it.
#define __exception_cb(name) __attribute__((btf_decl_tag("exception_callback:" #name)))

__noinline int double_cb(__u64 cookie)
{
	return cookie * 2 + 1;
}

static __noinline int level3(struct __sk_buff *skb)
{
	if (skb->len > 100)
		bpf_throw(skb->len);
	return 7;
}

static __noinline int level2(struct __sk_buff *skb)
{
	return level3(skb) + 0;
}

static __noinline int level1(struct __sk_buff *skb)
{
	volatile int x = level2(skb);
	return x;
}

SEC("tc")
__exception_cb(double_cb)
int throw_cb(struct __sk_buff *skb)
{
	return level1(skb);
}

SEC("tc")
int throw_default(struct __sk_buff *skb)
{
	if (skb->len > 50)
		bpf_throw(3);
	return 1;
}

__noinline int minus_cb(__u64 cookie)
{
	return cookie - 1000 + 40;
}

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
__exception_cb(minus_cb)
int throw_global(struct __sk_buff *skb)
{
	return odd_throws(skb);
}

char _license[] SEC("license") = "GPL";
