package verifier_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// precisionProgram turns bytes into a program that moves small values
// between registers and stack slots on forking paths and uses some of them
// as offsets into a 48-byte map value, directly or in a function: the
// shapes precision tracking and stack liveness must get right.
func precisionProgram(data []byte) string {
	next := func(n int) int {
		if len(data) == 0 {
			return 0
		}
		c := data[0]
		data = data[1:]
		return int(c) % n
	}
	regs := []string{"r1", "r2", "r3", "r6", "r9"}
	reg := func() string { return regs[next(len(regs))] }
	consts := []int{0, 1, 8, 40, 47, 48, 100, -1}
	cons := func() int { return consts[next(len(consts))] }
	var b strings.Builder
	b.WriteString("*(u64 *)(r10 -64) = r1\n" + lookup4 + "if r0 == 0 goto out\nr7 = r0\nr1 = 0\nr2 = 0\nr3 = 0\nr6 = 0\nr9 = 0\n")
	label := 0
	var pending []int
	n := 1 + next(24)
	for i := 0; i < n && len(data) > 0; i++ {
		label++
		switch next(19) {
		case 0, 1, 15, 16: // a fork: different values on two paths
			fmt.Fprintf(&b, "r8 = *(u64 *)(r7 +8)\nif r8 > %d goto a%d\n%s = %d\ngoto b%d\na%d: %s = %d\nb%d:\n", next(8), label, reg(), cons(), label, label, reg(), cons(), label)
		case 2:
			fmt.Fprintf(&b, "%s %s %d\n", reg(), []string{"+=", "-=", "&=", "|=", "<<=", ">>=", "*="}[next(7)], []int{1, 3, 7, 8, 31, 47}[next(6)])
		case 3:
			fmt.Fprintf(&b, "%s = %s\n", reg(), reg())
		case 4:
			fmt.Fprintf(&b, "%s %s %s\n", reg(), []string{"+=", "-=", "&=", "|="}[next(4)], reg())
		case 5:
			fmt.Fprintf(&b, "*(%s *)(r10 -%d) = %s\n", []string{"u64", "u64", "u32", "u8"}[next(4)], 8*(1+next(4)), reg())
		case 6:
			fmt.Fprintf(&b, "%s = *(%s *)(r10 -%d)\n", reg(), []string{"u64", "u64", "u32", "u8"}[next(4)], 8*(1+next(4)))
		case 7: // a branch over a few instructions
			fmt.Fprintf(&b, "if %s %s %d goto p%d\n", reg(), []string{">", "<", "==", "!=", "s>"}[next(5)], cons(), label)
			pending = append(pending, label)
		case 8:
			fmt.Fprintf(&b, "if %s %s %s goto p%d\n", reg(), []string{">", "==", "!="}[next(3)], reg(), label)
			pending = append(pending, label)
		case 9, 10: // a use as an offset
			fmt.Fprintf(&b, "r0 = r7\nr0 += %s\nr0 = *(u8 *)(r0 +0)\n", reg())
		case 11: // a use in a function
			fmt.Fprintf(&b, "r1 = %s\nr2 = r7\ncall f\nr1 = 0\nr2 = 0\nr3 = 0\n", reg())
		case 12: // an unknown value, bounded or not
			r := reg()
			fmt.Fprintf(&b, "%s = *(u8 *)(r7 +16)\n%s &= %d\n", r, r, []int{31, 31, 63, 255}[next(4)])
		case 13: // a bound on it, on this register and those linked to it
			fmt.Fprintf(&b, "if %s > %d goto p%d\n", reg(), []int{7, 40, 47}[next(3)], label)
			pending = append(pending, label)
		case 14: // a use in a function through a stack pointer
			fmt.Fprintf(&b, "r1 = r10\nr1 += -%d\nr2 = r7\ncall g\nr1 = 0\nr2 = 0\nr3 = 0\n", 8*(1+next(4)))
		case 18: // a helper reading a constant number of stack bytes
			fmt.Fprintf(&b, "r1 = r10\nr1 += -%d\nr2 = %d\ncall bpf_trace_printk#6\nr1 = 0\nr2 = 0\nr3 = 0\n", 8*(2+next(3)), []int{1, 4, 8, 12}[next(4)])
		case 17: // a function that may return through a tail call
			fmt.Fprintf(&b, "r1 = %s\nr2 = r10\ncall h\nr%d = r0\nr1 = 0\nr2 = 0\nr3 = 0\n", reg(), []int{1, 2, 3, 8}[next(4)])
		}
		if len(pending) > 0 && next(2) == 0 {
			fmt.Fprintf(&b, "p%d:\n", pending[0])
			pending = pending[1:]
		}
	}
	for _, l := range pending {
		fmt.Fprintf(&b, "p%d:\n", l)
	}
	b.WriteString("out: r0 = 0\nexit\n")
	prog := b.String()
	if strings.Contains(prog, "call f") {
		prog += "f: r2 += r1\nr0 = *(u8 *)(r2 +0)\nr0 = 0\nexit\n"
	}
	if strings.Contains(prog, "call h") {
		// h returns its argument masked, or the tail-called program's R0.
		prog += "h: r6 = r1\nr6 &= 7\nr1 = *(u64 *)(r2 -64)\nr2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12\nr0 = r6\nexit\n"
	}
	if strings.Contains(prog, "call g") {
		prog += "g: r3 = *(u64 *)(r1 +0)\nr2 += r3\nr0 = *(u8 *)(r2 +0)\nr0 = 0\nexit\n"
	}
	return prog
}

// checkPrecisionAgrees verifies a program twice: as usual, and comparing
// every scalar and stack slot. Imprecise scalars and dead slots only let
// more states be pruned, never one that would fail: what the exact
// comparison rejects must be rejected as usual too.
func checkPrecisionAgrees(t *testing.T, data []byte) (accepted bool) {
	src := precisionProgram(data)
	insns, err := isa.Assemble(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	// With func_info, as the kernel requires for tail calls in subprograms.
	opts := verifier.Options{Type: progtype.XDP, Maps: []verifier.MapInfo{{Name: "val48", Spec: val48}, {Name: "progs", Spec: progArray, Index: 1}}, Funcs: funcInfos(insns, nil)}
	if _, err := verifier.Verify(insns, opts); err != nil {
		return false
	}
	if _, err := verifier.VerifyExact(insns, opts); err != nil {
		t.Fatalf("accepted, but rejected comparing every value: %v\n%s", err, src)
	}
	return true
}

func FuzzPrecisionAgrees(f *testing.F) {
	f.Add([]byte{0, 3, 1, 4, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3})
	f.Fuzz(func(t *testing.T, data []byte) { checkPrecisionAgrees(t, data) })
}

// TestPrecisionAgreesRandom runs checkPrecisionAgrees on pseudo-random
// programs, so that plain `go test` covers it.
func TestPrecisionAgreesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	accepted := 0
	for range n {
		data := make([]byte, 4+rng.IntN(120))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if checkPrecisionAgrees(t, data) {
			accepted++
		}
	}
	t.Logf("%d of %d programs accepted and checked", accepted, n)
}
