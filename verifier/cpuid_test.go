package verifier_test

import (
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// bpf_get_smp_processor_id returns below Options.CPUs (the kernel's
// nr_cpu_ids bound): an index into two stack slots scaled by it stays in
// them with 2 CPUs, and not with 3 or an unknown count.
func TestCPUIDRange(t *testing.T) {
	const src = "r1 = 0\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -8) = r1\ncall bpf_get_smp_processor_id\n" +
		"r0 <<= 3\nr1 = r10\nr1 += -16\nr1 += r0\nr0 = *(u64 *)(r1 +0)\nexit"
	insns, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cpus int
		ok   bool
	}{{1, true}, {2, true}, {3, false}, {0, false}} {
		_, err := verifier.Verify(insns, verifier.Options{Type: progtype.SocketFilter, CPUs: c.cpus})
		if (err == nil) != c.ok {
			t.Errorf("%d CPUs: %v, want accepted %v", c.cpus, err, c.ok)
		}
	}
}
