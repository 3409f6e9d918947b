//go:build ignore

// reuseport.c: sk_reuseport programs that steer a reuseport group's
// packets with bpf_sk_select_reuseport into the socket at an index of a
// reuseport array the packet names, and report the helper's result and
// the context's fields. select_udp reads the index and the verdict from
// the first two bytes of a UDP datagram's payload (odd: SK_DROP);
// select_tcp takes the index from a SYN's source port and passes.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_REUSEPORT_SOCKARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __always_inline void put(__u32 k, __u64 v)
{
	bpf_map_update_elem(&seen, &k, &v, 0);
}

static __always_inline void report(struct sk_reuseport_md *md, long err)
{
	put(0, (__u32)err);
	put(1, md->len);
	put(2, md->eth_protocol);
	put(3, md->ip_protocol);
	put(4, md->bind_inany);
}

SEC("sk_reuseport")
int select_udp(struct sk_reuseport_md *md)
{
	__u8 *data = md->data, *end = md->data_end;
	__u32 key;
	long err;

	if (data + 10 > end) {
		put(0, 0xffff);
		return SK_PASS;
	}
	key = data[8];
	err = bpf_sk_select_reuseport(md, &socks, &key, 0);
	report(md, err);
	put(5, data[9]);
	return data[9] & 1 ? SK_DROP : SK_PASS;
}

SEC("sk_reuseport")
int select_tcp(struct sk_reuseport_md *md)
{
	__u8 *data = md->data, *end = md->data_end;
	__u32 key;
	long err;

	if (data + 20 > end) {
		put(0, 0xffff);
		return SK_PASS;
	}
	key = data[1] % 10;
	err = bpf_sk_select_reuseport(md, &socks, &key, 0);
	report(md, err);
	put(5, data[13]);
	return SK_PASS;
}

char _license[] SEC("license") = "GPL";
