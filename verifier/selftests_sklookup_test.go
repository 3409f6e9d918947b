package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestSKLookupAssign covers sk_lookup's bpf_sk_assign
// (bpf_sk_lookup_assign_proto: ctx, ARG_PTR_TO_SOCKET_OR_NULL, flags): a
// socket from a sockmap or sockhash, checked or not, NULL, the context's
// selected socket, and what it refuses.
func TestSelftestSKLookupAssign(t *testing.T) {
	sl := func(c vcase) vcase {
		c.typ, c.attach = ebpf.SkLookup, ebpf.AttachSkLookup
		return c
	}
	sm := []maps.Spec{sockMap}
	// r9 keeps the context.
	lookup := "r9 = r1\n" + lookup4
	assign := "r1 = r9\nr3 = 0\ncall bpf_sk_assign#124\n"
	release := "r1 = r6\ncall bpf_sk_release#86\n"
	out := "\nout: r0 = 1\nexit"
	runCases(t, []vcase{
		sl(vcase{name: "assign sockmap socket", maps: sm, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr2 = r0\n" + assign + release + out, kmsg: true}),
		sl(vcase{name: "assign sockhash socket", maps: []maps.Spec{sockHash}, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr2 = r0\n" + assign + release + out}),
		sl(vcase{name: "assign keeps the reference", maps: sm, asm: lookup + "if r0 == 0 goto out\nr2 = r0\n" + assign + out, err: "Unreleased reference", kmsg: true}),
		sl(vcase{name: "assign null", asm: "r9 = r1\nr2 = 0\n" + assign + out}),
		sl(vcase{name: "assign flags from the context", asm: "r9 = r1\nr3 = *(u32 *)(r1 +8)\nr2 = 0\ncall bpf_sk_assign#124" + out}),
		sl(vcase{name: "assign selected socket", asm: "r9 = r1\nr2 = *(u64 *)(r1 +0)\n" + assign + out}),
		sl(vcase{name: "assign selected socket checked", asm: "r9 = r1\nr2 = *(u64 *)(r1 +0)\nif r2 == 0 goto out\n" + assign + out}),
		sl(vcase{name: "assign unchecked sockmap value", maps: sm, asm: lookup + "r2 = r0\n" + assign + out, err: "R2 type=map_value_or_null expected=sock", kmsg: true}),
		sl(vcase{name: "assign scalar", asm: "r9 = r1\nr2 = 1\n" + assign + out, err: "R2 type=scalar expected=sock", kmsg: true}),
		sl(vcase{name: "assign stack", asm: "r9 = r1\nr2 = r10\n" + assign + out, err: "R2 type=fp expected=sock", kmsg: true}),
		sl(vcase{name: "assign context", asm: "r9 = r1\nr2 = r1\n" + assign + out, err: "R2 type=ctx expected=sock", kmsg: true}),
		sl(vcase{name: "assign not the context", asm: "r1 = r10\nr2 = 0\nr3 = 0\ncall bpf_sk_assign#124" + out, err: "R1 type=fp expected=ctx", kmsg: true}),
		sl(vcase{name: "assign socket then read selected", maps: sm, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr2 = r0\n" + assign + release + "r2 = *(u64 *)(r9 +0)\nif r2 == 0 goto out\nr0 = *(u32 *)(r2 +4)" + out}),
		sl(vcase{name: "release selected socket", asm: "r1 = *(u64 *)(r1 +0)\nif r1 == 0 goto out\ncall bpf_sk_release#86" + out, err: "R1 must be referenced when passed to release function", kmsg: true}),
		sl(vcase{name: "sk_lookup cannot bpf_sk_lookup_tcp", asm: "r2 = r10\nr2 += -16\n*(u64 *)(r10 -16) = 0\n*(u32 *)(r10 -8) = 0\nr3 = 12\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nr0 = 1\nexit", err: "program of this type cannot use helper bpf_sk_lookup_tcp#84", kmsg: true}),
	})
}
