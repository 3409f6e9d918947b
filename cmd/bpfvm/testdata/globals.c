// globals.c: a program whose verdict and instruction count follow its
// global variables, for veristat -G (set-global-vars): a read-only flag
// that turns on a packet read without a bounds check, an enum, a struct
// with a nested anonymous member and an array, and a .bss counter.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

enum mode { MODE_OFF, MODE_SAFE = 3, MODE_UNSAFE };

const volatile int unsafe = 0;
const volatile enum mode mode = MODE_OFF;
const volatile signed char small = 0;
const volatile struct {
	unsigned int a;
	struct {
		unsigned short b;
	};
	int arr[4];
	struct {
		unsigned char c;
	} inner[2];
	unsigned int flag : 1;
} cfg = {};
unsigned long long hits;

SEC("xdp")
int filter(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (unsafe)
		return data[0]; // rejected: no bounds check
	if (mode == MODE_UNSAFE)
		return data[1];
	if (small < 0)
		return data[2];
	if (cfg.a == 7 || cfg.b == 9 || cfg.arr[2] == 5 || cfg.inner[1].c == 1)
		return data[3];
	if (mode == MODE_SAFE && (void *)(data + 1) <= end) {
		hits++;
		return data[0] & 1 ? XDP_DROP : XDP_PASS;
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
