package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestReferences covers acquired references (ring buffer samples):
// release on every path, leaks, double release, use after release, and the
// null check of a reservation.
func TestSelftestReferences(t *testing.T) {
	rb := []maps.Spec{ringbuf}
	reserve := "r1 = map[fd:0] ll\nr2 = 16\nr3 = 0\ncall bpf_ringbuf_reserve#131\n"
	out := "\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		{name: "reserve submit", maps: rb, asm: reserve + "if r0 == 0 goto out\n*(u64 *)(r0 +8) = 1\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132" + out},
		{name: "reserve discard", maps: rb, asm: reserve + "if r0 == 0 goto out\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_discard#133" + out},
		{name: "reserve leak", maps: rb, asm: reserve + "if r0 == 0 goto out\nr0 = 0\nexit" + out, err: "Unreleased reference id=", klog: "Unreleased reference id="},
		{name: "reserve leak on one path", maps: rb, asm: "r6 = *(u32 *)(r1 +12)\n" + reserve + "if r0 == 0 goto out\nif r6 == 0 goto leak\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132\nleak: r0 = 0\nexit" + out, err: "Unreleased reference", klog: "Unreleased reference"},
		{name: "submit or discard by path", maps: rb, asm: "r6 = *(u32 *)(r1 +12)\n" + reserve + "if r0 == 0 goto out\nr1 = r0\nr2 = 0\nif r6 == 0 goto d\ncall bpf_ringbuf_submit#132\ngoto out\nd: call bpf_ringbuf_discard#133" + out},
		{name: "unchecked submit", maps: rb, asm: reserve + "r1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132" + out, err: "R1 type=ringbuf_mem_or_null expected=ringbuf_mem", kmsg: true},
		{name: "unchecked write", maps: rb, asm: reserve + "*(u64 *)(r0 +0) = 1" + out, err: "R0 invalid mem access 'ringbuf_mem_or_null'", kmsg: true},
		{name: "null branch has no reference", maps: rb, asm: reserve + "if r0 != 0 goto ok\nr0 = 0\nexit\nok: r1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132" + out},
		{name: "double submit", maps: rb, asm: reserve + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_submit#132" + out, err: "R1 type=scalar expected=ringbuf_mem", kmsg: true},
		{name: "use after submit", maps: rb, asm: reserve + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132\n*(u64 *)(r6 +0) = 1" + out, err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "spilled copy released", maps: rb, asm: reserve + "if r0 == 0 goto out\n*(u64 *)(r10 -8) = r0\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132\nr6 = *(u64 *)(r10 -8)\n*(u64 *)(r6 +0) = 1" + out, err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "submit copy", maps: rb, asm: reserve + "r6 = r0\nif r0 == 0 goto out\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_submit#132" + out},
		{name: "sample bounds", maps: rb, asm: reserve + "if r0 == 0 goto out\n*(u64 *)(r0 +8) = 1\nr6 = r0\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_discard#133" + out},
		{name: "sample past end", maps: rb, asm: reserve + "if r0 == 0 goto out\n*(u64 *)(r0 +9) = 1\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_discard#133" + out, err: "invalid access to memory, mem_size=16 off=9 size=8", kmsg: true},
		{name: "submit with offset", maps: rb, asm: reserve + "if r0 == 0 goto out\nr1 = r0\nr1 += 8\nr2 = 0\ncall bpf_ringbuf_submit#132" + out, err: "R1 must have zero offset when passed to release func"},
		{name: "submit map value", maps: []maps.Spec{ringbuf, hashMap}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132" + out, err: "R1 type=map_value expected=ringbuf_mem", kmsg: true},
		{name: "reserve variable size", maps: rb, asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 15\nr1 = map[fd:0] ll\nr3 = 0\ncall bpf_ringbuf_reserve#131\nif r0 == 0 goto out\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_discard#133" + out, err: "R2 is not a known constant'", kmsg: true},
		{name: "reserve in callee released by caller", maps: rb, asm: "call f\nif r0 == 0 goto out\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132" + out + "\nf: " + reserve + "exit"},
		{name: "reserve released in callee", maps: rb, asm: reserve + "if r0 == 0 goto out\nr1 = r0\ncall f" + out + "\nf: r2 = 0\ncall bpf_ringbuf_submit#132\nr0 = 0\nexit"},
		{name: "leak from callee", maps: rb, asm: "call f" + out + "\nf: " + reserve + "r0 = 0\nexit", err: "Unreleased reference", klog: "Unreleased reference"},
		{name: "ld abs with reference", typ: ebpf.SocketFilter, maps: rb, asm: "r6 = r1\n" + reserve + "if r0 == 0 goto out\nr7 = r0\nr0 = *(u8 *)skb[0]\nr1 = r7\nr2 = 0\ncall bpf_ringbuf_discard#133" + out, err: "Unreleased reference", kmsg: true},
		{name: "two samples", maps: rb, asm: reserve + "if r0 == 0 goto out\nr6 = r0\n" + reserve + "if r0 == 0 goto d\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132\nd: r1 = r6\nr2 = 0\ncall bpf_ringbuf_discard#133" + out},
		{name: "two samples one leaked", maps: rb, asm: reserve + "if r0 == 0 goto out\nr6 = r0\n" + reserve + "if r0 == 0 goto d\nr1 = r0\nr2 = 0\ncall bpf_ringbuf_submit#132\nd: r0 = 0\nexit" + out, err: "Unreleased reference", klog: "Unreleased reference"},
		{name: "ringbuf output", maps: rb, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 8\nr4 = 0\ncall bpf_ringbuf_output#130" + out},
	})
}
