package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestNetfilter covers BPF_PROG_TYPE_NETFILTER: struct bpf_nf_ctx
// (nf_is_valid_access: two read-only 64-bit trusted pointers to struct
// nf_hook_state and struct sk_buff, read through the host's BTF), the
// NF_DROP/NF_ACCEPT return range and bpf_base_func_proto's helpers.
func TestSelftestNetfilter(t *testing.T) {
	nf := func(c vcase) vcase {
		c.typ, c.attach, c.btf = ebpf.Netfilter, ebpf.AttachNetfilter, true
		return c
	}
	// The offsets are 6.18's BTF's: struct sk_buff's len at 112 and
	// data at 200, struct net_device's ifindex at 224.
	runCases(t, []vcase{
		nf(vcase{name: "accept", asm: "r0 = 1\nexit"}),
		nf(vcase{name: "drop", asm: "r0 = 0\nexit"}),
		nf(vcase{name: "return 2", asm: "r0 = 2\nexit", err: "At program exit the register R0 has smin=2 smax=2 should have been in [0, 1]", kmsg: true}),
		nf(vcase{name: "return unknown", asm: "r0 = *(u64 *)(r1 +8)\nr0 = *(u32 *)(r0 +112)\nexit", err: "should have been in [0, 1]", kmsg: true}),
		nf(vcase{name: "skb len", asm: "r2 = *(u64 *)(r1 +8)\nr3 = *(u32 *)(r2 +112)\nr0 = 1\nif r3 > 100 goto out\nr0 = 0\nout: exit"}),
		nf(vcase{name: "skb data pointer", asm: "r2 = *(u64 *)(r1 +8)\nr3 = *(u64 *)(r2 +200)\nr0 = 1\nexit"}),
		nf(vcase{name: "state hook and pf", asm: "r2 = *(u64 *)(r1 +0)\nr3 = *(u8 *)(r2 +0)\nr4 = *(u8 *)(r2 +1)\nr0 = 1\nexit"}),
		nf(vcase{name: "state in device ifindex", asm: "r2 = *(u64 *)(r1 +0)\nr2 = *(u64 *)(r2 +8)\nr3 = *(u32 *)(r2 +224)\nr0 = 1\nexit"}),
		nf(vcase{name: "state past its end", asm: "r2 = *(u64 *)(r1 +0)\nr3 = *(u64 *)(r2 +48)\nr0 = 1\nexit", err: "access beyond struct nf_hook_state at off 48 size 8", kmsg: true}),
		nf(vcase{name: "write skb", asm: "r2 = *(u64 *)(r1 +8)\n*(u32 *)(r2 +112) = 0\nr0 = 1\nexit", err: "only read is supported", kmsg: true}),
		nf(vcase{name: "ctx narrow", asm: "r2 = *(u32 *)(r1 +8)\nr0 = 1\nexit", err: "invalid bpf_context access off=8 size=4", kmsg: true}),
		nf(vcase{name: "ctx past end", asm: "r2 = *(u64 *)(r1 +16)\nr0 = 1\nexit", err: "invalid bpf_context access off=16 size=8", kmsg: true}),
		nf(vcase{name: "ctx write", asm: "*(u64 *)(r1 +8) = r1\nr0 = 1\nexit", err: "invalid bpf_context access off=8 size=8", kmsg: true}),
		nf(vcase{name: "ctx misaligned", asm: "r2 = *(u64 *)(r1 +4)\nr0 = 1\nexit", err: "invalid bpf_context access off=4 size=8", kmsg: true}),
		nf(vcase{name: "ktime", asm: "call bpf_ktime_get_ns#5\nr0 = 1\nexit"}),
		nf(vcase{name: "map lookup", maps: []maps.Spec{arrayMap}, asm: lookup4 + "r0 = 1\nexit"}),
		nf(vcase{name: "skb_load_bytes", asm: "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\nr0 = 1\nexit", err: "program of this type cannot use helper bpf_skb_load_bytes#26", kmsg: true}),
		nf(vcase{name: "perf_event_output", asm: "call bpf_perf_event_output#25\nr0 = 1\nexit", err: "program of this type cannot use helper bpf_perf_event_output#25", kmsg: true}),
		nf(vcase{name: "skb pointer to a helper", asm: "r1 = *(u64 *)(r1 +8)\ncall bpf_get_hash_recalc#34\nr0 = 1\nexit", err: "program of this type cannot use helper bpf_get_hash_recalc#34", kmsg: true}),
		// bpf_dynptr_from_skb takes the trusted struct sk_buff for its
		// struct __sk_buff argument (the kernel's taking_projection).
		nf(vcase{name: "dynptr from skb", asm: "r1 = *(u64 *)(r1 +8)\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr0 = 1\nexit"}),
		nf(vcase{name: "dynptr from skb slice", asm: "r1 = *(u64 *)(r1 +8)\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr1 = r10\nr1 += -16\nr2 = 0\nr3 = r10\nr3 += -40\nr4 = 20\ncall bpf_dynptr_slice#0\nif r0 == 0 goto out\nr1 = *(u8 *)(r0 +0)\nout: r0 = 1\nexit"}),
		nf(vcase{name: "dynptr from skb write slice", asm: "r1 = *(u64 *)(r1 +8)\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr1 = r10\nr1 += -16\nr2 = 0\nr3 = r10\nr3 += -40\nr4 = 20\ncall bpf_dynptr_slice#0\nif r0 == 0 goto out\n*(u8 *)(r0 +0) = 1\nout: r0 = 1\nexit", err: "cannot write into rdonly_mem", kmsg: true}),
		nf(vcase{name: "dynptr from ctx", asm: "r2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr0 = 1\nexit", err: "R1 must be referenced or trusted", kmsg: true}),
		nf(vcase{name: "dynptr from state", asm: "r1 = *(u64 *)(r1 +0)\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr0 = 1\nexit", err: "kernel function bpf_dynptr_from_skb args#0 expected pointer to STRUCT __sk_buff but R1 has a pointer to STRUCT nf_hook_state", kmsg: true}),
		nf(vcase{name: "dynptr from skb offset", asm: "r1 = *(u64 *)(r1 +8)\nr1 += 8\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr0 = 1\nexit", err: "kernel function bpf_dynptr_from_skb args#0 expected pointer to STRUCT __sk_buff but R1 has a pointer to STRUCT sk_buff", kmsg: true}),
		nf(vcase{name: "dynptr from skb dev", asm: "r1 = *(u64 *)(r1 +8)\nr1 = *(u64 *)(r1 +16)\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr0 = 1\nexit", err: "R1 must be referenced or trusted", kmsg: true}),
		nf(vcase{name: "dynptr from stack", asm: "r1 = r10\nr1 += -32\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\nr0 = 1\nexit", err: "R1 must be referenced or trusted", kmsg: true}),
		// okfn, a function pointer, is untrusted memory, which may be NULL.
		nf(vcase{name: "state okfn may be NULL", asm: "r2 = *(u64 *)(r1 +0)\nr3 = *(u64 *)(r2 +40)\nr0 = 1\nif r3 != 0 goto out\nr0 = 2\nout: exit", err: "At program exit the register R0 has smin=2 smax=2 should have been in [0, 1]", kmsg: true}),
		nf(vcase{name: "skb pointer arithmetic", asm: "r2 = *(u64 *)(r1 +8)\nr2 += 112\nr3 = *(u32 *)(r2 +0)\nr0 = 1\nexit"}),
	})
}
