package verifier_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"bpfvm/isa"
	"bpfvm/verifier"
)

// ctxOps are the ways a program touches one context offset: loads, sign
// extending loads, stores of a register and of an immediate.
var ctxOps = []struct {
	name string
	asm  func(size string, off int) string
}{
	{"ldx", func(size string, off int) string {
		return fmt.Sprintf("r0 = *(u%s *)(r1 %+d)\nr0 = 0\nexit", size, off)
	}},
	{"ldsx", func(size string, off int) string {
		return fmt.Sprintf("r0 = *(s%s *)(r1 %+d)\nr0 = 0\nexit", size, off)
	}},
	{"stx", func(size string, off int) string {
		return fmt.Sprintf("r2 = 1\n*(u%s *)(r1 %+d) = r2\nr0 = 0\nexit", size, off)
	}},
	{"st", func(size string, off int) string { return fmt.Sprintf("*(u%s *)(r1 %+d) = 1\nr0 = 0\nexit", size, off) }},
}

// TestCtxFieldsExhaustive compares every context access of every size at
// every offset (and a little past the end), for each operation and each
// program type with a context, with the running kernel: the verdict and,
// for a rejection, the message.
func TestCtxFieldsExhaustive(t *testing.T) {
	types := []struct {
		typ  ebpf.ProgramType
		size int
	}{
		{ebpf.XDP, 24},
		{ebpf.SocketFilter, 192},
		{ebpf.SchedCLS, 192},
		{ebpf.SchedACT, 192},
	}
	// Known gaps, each a verdict the kernel's and not yet ours: the
	// __sk_buff.sk pointer (a nullable struct bpf_sock_common, which comes
	// with the socket program types).
	known := map[string]bool{
		"SocketFilter/ldx64/168": true,
		"SchedCLS/ldx64/168":     true,
		"SchedACT/ldx64/168":     true,
	}
	var total, agreed, gaps int
	for _, ty := range types {
		for off := -8; off < ty.size+8; off++ {
			for _, size := range []string{"8", "16", "32", "64"} {
				for _, op := range ctxOps {
					if op.name == "ldsx" && size == "64" {
						continue // no 64-bit sign extension
					}
					name := fmt.Sprintf("%s/%s%s/%d", ty.typ, op.name, size, off)
					insns, err := isa.Assemble(op.asm(size, off))
					if err != nil {
						t.Fatal(err)
					}
					_, ours := verifier.Verify(insns, verifier.Options{Type: progType(ty.typ)})
					if ours != nil && !errors.Is(ours, verifier.ErrRejected) {
						t.Errorf("%s: %v does not wrap ErrRejected", name, ours)
					}
					if known[name] {
						gaps++
						continue
					}
					klog, ran := kernelVerdict(t, ty.typ, nil, insns, ours)
					if !ran {
						continue
					}
					total++
					ok := true
					if ours != nil && !strings.Contains(klog, ours.Error()) {
						t.Errorf("%s: ours %q, kernel: %s", name, ours, lastLines(klog, 1))
						ok = false
					}
					if (ours == nil) != (klog == "") {
						t.Errorf("%s: ours %v, kernel: %s", name, ours, lastLines(klog, 1))
						ok = false
					}
					if ok {
						agreed++
					}
				}
			}
		}
	}
	if total == 0 {
		t.Skip("no kernel to compare with")
	}
	t.Logf("context accesses: %d/%d agree with the kernel (%d known gaps not compared)", agreed, total, gaps)
}
