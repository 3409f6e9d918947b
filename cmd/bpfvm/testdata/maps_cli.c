// maps_cli.c: maps with BTF keys and values of several kinds, and a program
// that changes them and prints with bpf_trace_printk, for the CLI's map
// commands, ctx_in/ctx_out and trace output.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

enum color { RED, GREEN = 2, BLUE };

struct flow {
	unsigned int addr;
	unsigned short port;
	unsigned char proto;
	char tag[5];
};

struct stats {
	unsigned long long packets;
	long long delta;
	enum color color;
	_Bool seen;
	char name[8];
	unsigned short hist[3];
	void *ptr;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, struct flow);
	__type(value, struct stats);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, unsigned int);
	__type(value, unsigned long long);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, unsigned int);
	__type(value, unsigned int);
} percpu SEC(".maps");

// Sizes without types: no BTF for the key and value, plain hex in
// bpftool's output.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__uint(key_size, 4);
	__uint(value_size, 20);
} raw SEC(".maps");

volatile unsigned int runs = 7;

// Counts packets by their first byte in counters[0], records a flow keyed
// by the packet's first bytes and prints the length.
SEC("xdp")
int count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned int zero = 0;
	unsigned long long *c = bpf_map_lookup_elem(&counters, &zero);
	if (c)
		__sync_fetch_and_add(c, 1);
	runs++;
	if (data + sizeof(struct flow) <= end) {
		struct flow k = {};
		__builtin_memcpy(&k, data, sizeof(k));
		struct stats v = {.packets = 1, .delta = -5, .color = BLUE, .seen = 1, .name = "pkt", .hist = {1, 2, 3}};
		bpf_map_update_elem(&flows, &k, &v, BPF_ANY);
	}
	unsigned int len = end - data;
	unsigned char big[20] = {1, 2, 3};
	bpf_map_update_elem(&raw, &len, big, BPF_ANY);
	bpf_printk("len %d runs %u", (int)len, runs);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
