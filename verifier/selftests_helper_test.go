package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestHelpers covers helper arguments: memory and size pairs (const,
// bounded, zero, unbounded, negative), uninitialised memory, the context
// argument, and what calls do to the registers.
func TestSelftestHelpers(t *testing.T) {
	tc := ebpf.SchedCLS
	// csum_diff(from, from_size, to, to_size, seed) reads two memories.
	csum := func(pre, from, fromSize string) string {
		return pre + "r1 = " + from + "\nr2 = " + fromSize + "\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit"
	}
	fp16 := "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\nr6 = r10\nr6 += -16\n"
	runCases(t, []vcase{
		{name: "mem const size", asm: csum(fp16, "r6", "16")},
		{name: "mem size past stack", asm: csum(fp16, "r6", "20"), err: "invalid read from stack R1 off=-16 size=20", kmsg: true},
		{name: "mem zero size", asm: csum(fp16, "r6", "0")},
		{name: "mem null zero size", asm: csum("", "0", "0")},
		{name: "mem null nonzero size", asm: csum("", "0", "4"), err: "R1 type=scalar expected=fp", kmsg: true},
		{name: "mem bounded size", asm: csum(fp16+"r7 = *(u32 *)(r1 +12)\nr7 &= 15\n", "r6", "r7")},
		{name: "mem bounded size too big", asm: csum(fp16+"r7 = *(u32 *)(r1 +12)\nr7 &= 31\n", "r6", "r7"), err: "invalid read from stack R1 off=-16 size=31", kmsg: true},
		{name: "mem unbounded size", asm: csum(fp16+"r7 = *(u32 *)(r1 +12)\n", "r6", "r7"), err: "R2 unbounded memory access, use 'var &= const' or 'if (var < const)'", kmsg: true},
		{name: "mem negative size", asm: csum(fp16+"r7 = *(u32 *)(r1 +12)\nr7 -= 4\nif r7 s> 8 goto +6\n", "r6", "r7"), err: "R2 min value is negative, either use unsigned or 'var &= const'", kmsg: true},
		{name: "mem size checked", asm: csum(fp16+"r7 = *(u32 *)(r1 +12)\nif r7 > 16 goto +6\n", "r6", "r7")},
		{name: "mem size is pointer", asm: csum(fp16, "r6", "r10"), err: "R2 type=fp expected=scalar", kmsg: true},
		{name: "mem uninit stack priv", asm: csum("r6 = r10\nr6 += -16\n", "r6", "16")},
		{name: "mem uninit stack unpriv", unpriv: true, asm: csum("r6 = r10\nr6 += -16\n", "r6", "16"), err: "invalid read from stack R1 off=-16 size=16"},
		{name: "mem is ctx", asm: csum("", "r1", "4"), err: "R1 type=ctx expected=fp", kmsg: true},
		{name: "mem in packet", asm: xdpPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto +6\nr1 = r2\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit"},
		{name: "mem var offset stack", asm: fp16 + "r7 = *(u32 *)(r1 +12)\nr7 &= 8\nr6 += r7\n" + csum("", "r6", "8")},
		{name: "mem var offset stack too far", asm: fp16 + "r7 = *(u32 *)(r1 +12)\nr7 &= 8\nr6 += r7\n" + csum("", "r6", "9"), err: "invalid variable-offset read from stack R1 var_off=(0x0; 0x8) off=-16 size=9", kmsg: true},
		// Size arguments that must not be zero.
		{name: "size zero not allowed", maps: []maps.Spec{ringbuf}, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 0\nr4 = 0\ncall bpf_ringbuf_output#130\nr0 = 0\nexit"},
		{name: "printk zero size", asm: "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 0\ncall bpf_trace_printk#6\nr0 = 0\nexit", err: "R2 invalid zero-sized read: u64=[0,0]", kmsg: true},
		{name: "printk maybe zero size", asm: "*(u64 *)(r10 -8) = 0\nr2 = *(u32 *)(r1 +12)\nr2 &= 7\nr1 = r10\nr1 += -8\ncall bpf_trace_printk#6\nr0 = 0\nexit", err: "R2 invalid zero-sized read: u64=[0,7]", kmsg: true},
		// bpf_trace_printk's prototype has two arguments: R3-R5 are not checked.
		{name: "printk", asm: "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 8\ncall bpf_trace_printk#6\nr0 = 0\nexit"},
		// Uninitialised memory the helper writes.
		{name: "load bytes to uninit stack", typ: tc, asm: "r2 = 0\nr3 = r10\nr3 += -16\nr4 = 16\ncall bpf_skb_load_bytes#26\nr0 = *(u64 *)(r10 -16)\nexit"},
		{name: "load bytes to uninit stack unpriv", typ: tc, unpriv: true, asm: "r2 = 0\nr3 = r10\nr3 += -16\nr4 = 16\ncall bpf_skb_load_bytes#26\nr0 = *(u64 *)(r10 -16)\nr0 = 0\nexit"},
		{name: "load bytes past stack", typ: tc, asm: "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 16\ncall bpf_skb_load_bytes#26\nr0 = 0\nexit", err: "invalid write to stack R3 off=-8 size=16", kmsg: true},
		{name: "load bytes over spilled pointer", typ: tc, asm: "*(u64 *)(r10 -8) = r1\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_skb_load_bytes#26\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "load bytes to map value", typ: tc, maps: []maps.Spec{val48}, asm: "r6 = r1\n" + lookup4 + "if r0 == 0 goto out\nr1 = r6\nr2 = 0\nr3 = r0\nr4 = 48\ncall bpf_skb_load_bytes#26\nout: r0 = 0\nexit"},
		{name: "load bytes past map value", typ: tc, maps: []maps.Spec{val48}, asm: "r6 = r1\n" + lookup4 + "if r0 == 0 goto out\nr1 = r6\nr2 = 0\nr3 = r0\nr3 += 8\nr4 = 48\ncall bpf_skb_load_bytes#26\nout: r0 = 0\nexit", err: "invalid access to map value, value_size=48 off=8 size=48", kmsg: true},
		{name: "load bytes var size to map value", typ: tc, maps: []maps.Spec{val48}, asm: "r6 = r1\n" + lookup4 + "if r0 == 0 goto out\nr4 = *(u32 *)(r0 +0)\nif r4 > 48 goto out\nif r4 == 0 goto out\nr1 = r6\nr2 = 0\nr3 = r0\ncall bpf_skb_load_bytes#26\nout: r0 = 0\nexit"},
		{name: "comm to stack", typ: ebpf.Kprobe, noKernel: true, asm: "r1 = r10\nr1 += -16\nr2 = 16\ncall bpf_get_current_comm#16\nr0 = 0\nexit"},
		// The context argument.
		{name: "ctx arg is fp", typ: tc, asm: "r1 = r10\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\nr0 = 0\nexit", err: "R1 type=fp expected=ctx", kmsg: true},
		{name: "ctx arg var offset", typ: tc, asm: "r2 = *(u32 *)(r1 +0)\nr2 &= 4\nr1 += r2\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\nr0 = 0\nexit", err: "variable ctx access var_off=(0x0; 0x4) disallowed", kmsg: true},
		{name: "ctx arg uninit", typ: tc, asm: "r6 = r1\nr1 = r10\nr1 += -8\nr2 = 8\ncall bpf_ktime_get_ns#5\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\nr0 = 0\nexit", err: "R1 !read_ok", kmsg: true},
		// Calls and registers.
		{name: "r0 after call", asm: "call bpf_ktime_get_ns#5\nr0 += 1\nexit"},
		{name: "r1 to r5 clobbered", asm: "r5 = 1\ncall bpf_get_prandom_u32#7\nr0 = r5\nexit", err: "R5 !read_ok", kmsg: true},
		{name: "r6 to r9 kept", asm: "r6 = 1\nr7 = 2\nr8 = 3\nr9 = r1\ncall bpf_get_prandom_u32#7\nr0 = r6\nr0 += r7\nr0 += r8\nr1 = *(u32 *)(r9 +12)\nexit"},
		{name: "anything arg uninit", asm: "call bpf_redirect#23\nexit", err: "R2 !read_ok", kmsg: true},
		{name: "redirect", asm: "r1 = 1\nr2 = 0\ncall bpf_redirect#23\nexit"},
		{name: "unknown helper", asm: "call 100000\nr0 = 0\nexit", err: "invalid func unknown#100000", kmsg: true},
		{name: "helper zero", asm: "call 0\nr0 = 0\nexit", err: "program of this type cannot use helper bpf_unspec#0", kmsg: true},
		{name: "ringbuf query", maps: []maps.Spec{ringbuf}, asm: "r1 = map[fd:0] ll\nr2 = 0\ncall bpf_ringbuf_query#134\nexit"},
		{name: "result of helper unknown", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr6 += r0\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit", err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "result of helper masked", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr0 &= 31\nr6 += r0\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit"},
	})
}
