package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
)

// Programs where pruning once explored far more states than the kernel's:
// each asserts the verdict and that bpfvm processes at most the
// instructions kernel 6.18 does (kinsns, measured), and at most the
// running kernel's count.
func TestProcessedAtMostKernel(t *testing.T) {
	runCases(t, []vcase{
		// bpf_trace_printk's prototype declares two arguments: R3-R5 are
		// passed on unchecked, so they are dead at the call, and the
		// paths that put a stack pointer or a scalar in R3 join. With
		// R3 live, each value of the switch was explored twice.
		{name: "printk unchecked args dead", typ: ebpf.SocketFilter, asm: printkJoin, kinsns: 47},
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
