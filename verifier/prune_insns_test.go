package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// Programs where pruning once explored far more states than the kernel's:
// each asserts the verdict and that bpfvm processes at most the
// instructions kernel 6.18 does (kinsns, measured), and at most the
// running kernel's count.
func TestProcessedAtMostKernel(t *testing.T) {
	pa := []maps.Spec{arrayMap, progArray}
	runCases(t, []vcase{
		// A tail call or LD_ABS in a subprogram may return to the
		// caller: as in the kernel, that path is followed first and the
		// one past the instruction queued. Both programs process the
		// kernel's count (22 and 5; 24 and 10 the other way round).
		{name: "tail call in a callback's subprogram", maps: pa, asm: "*(u64 *)(r10 -8) = r1\nr1 = 1\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r1 = *(u64 *)(r2 +0)\ncall f\nr0 &= 1\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "cannot tail call within callback", kmsg: true},
		{name: "LD_ABS in a subprogram", typ: ebpf.SchedCLS, asm: "call f\nif r0 == 5 goto o\nr0 = *(u64 *)(r0 +0)\no: r0 = 0\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[0]\nr0 = 5\nexit", err: "R0 invalid mem access 'scalar'", kmsg: true, kinsns: 5},
		// bpf_trace_printk's prototype declares two arguments: R3-R5 are
		// passed on unchecked, so they are dead at the call, and the
		// paths that put a stack pointer or a scalar in R3 join. With
		// R3 live, each value of the switch was explored twice.
		{name: "printk unchecked args dead", typ: ebpf.SocketFilter, asm: printkJoin, kinsns: 47},
		// A spilled imprecise scalar covers eight unknown bytes, which
		// read back as an unbounded scalar: the path that wrote the slot
		// through a variable offset joins the one that spilled zero.
		{name: "spilled scalar covers misc slot", typ: ebpf.SocketFilter, asm: spillCoversMisc, kinsns: 46},
		// A precise spilled scalar does not: the slot's value decides
		// an access on the explored path.
		{name: "precise spill not covering misc slot", typ: ebpf.SocketFilter, maps: []maps.Spec{arrayMap}, asm: spillPreciseMisc, err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
	})
}

const printkJoin = `*(u64 *)(r10 -8) = 0
*(u64 *)(r10 -16) = 0
call bpf_get_prandom_u32
r6 = r0
call bpf_get_prandom_u32
r7 = r0
r3 = r10
r3 += -16
if r6 == 0 goto +1
r3 = r6
r8 = 0
if r7 > 3 goto out
if r7 == 0 goto c0
if r7 == 1 goto c1
if r7 == 2 goto c2
r8 = 3
goto out
c0: r8 = 10
goto out
c1: r8 = 11
goto out
c2: r8 = 12
out: r1 = r10
r1 += -8
r2 = 8
call bpf_trace_printk#6
r0 = r8
exit`

const spillCoversMisc = `r6 = 0
*(u64 *)(r10 -8) = r6
call bpf_get_prandom_u32
r7 = r0
if r7 == 0 goto w
j: r4 = 0
if r7 > 100 goto +1
r4 = 1
if r7 > 200 goto +1
r4 = 2
if r7 > 300 goto +1
r4 = 3
r3 = *(u64 *)(r10 -8)
r0 = r3
exit
w: call bpf_get_prandom_u32
r2 = r0
r2 &= 4
r1 = r10
r1 += -8
r1 += r2
*(u32 *)(r1 +0) = r0
goto j`

const spillPreciseMisc = `r6 = 0
*(u64 *)(r10 -8) = r6
*(u32 *)(r10 -12) = 0
call bpf_get_prandom_u32
r7 = r0
if r7 == 0 goto w
j: r1 = map[fd:0] ll
r2 = r10
r2 += -12
call bpf_map_lookup_elem#1
if r0 == 0 goto out
r3 = *(u64 *)(r10 -8)
r0 += r3
r0 = *(u8 *)(r0 +0)
out: r0 = 0
exit
w: call bpf_get_prandom_u32
r2 = r0
r2 &= 4
r1 = r10
r1 += -8
r1 += r2
*(u32 *)(r1 +0) = r0
goto j`
