package verifier_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// scase is a program loaded without capabilities, with its expected
// verdict and the Spectre mitigations the verifier asks for.
type scase struct {
	name string
	maps []maps.Spec
	asm  string
	err  string // "" accepts; otherwise the error, word for word
	// nospec, nospecResult and masked list the instructions that get a
	// barrier before them, a barrier after them, and masked pointer
	// arithmetic.
	nospec, nospecResult, masked []int
}

// TestSpectre covers the kernel's Spectre mitigations for unprivileged
// loads: speculative paths past branches whose outcome is known and past
// masked pointer arithmetic, error recovery on them with a barrier, the
// masking of pointer arithmetic (which all paths must agree on) and the
// barriers after stores Spectre v4 could bypass. Where the machine lets
// unprivileged programs load (kernel.unprivileged_bpf_disabled = 0), each
// is compared with the kernel loading it from a thread without
// capabilities: the verdict, the error line and the instructions
// processed, speculative ones included.
func TestSpectre(t *testing.T) {
	arr := []maps.Spec{val48}
	out := "\nout: r0 = 0\nexit"
	runSpectre(t, []scase{
		{name: "known branch, bad fall-through", asm: "r0 = 0\nif r0 == 0 goto +1\nr0 = *(u64 *)(r10 -8)\nexit", nospec: []int{2}},
		{name: "known branch, bad target", asm: "r0 = 0\nif r0 != 0 goto +1\nexit\nr0 = *(u64 *)(r10 -8)\nexit", nospec: []int{3}},
		{name: "known branch, pointer leak", asm: "r0 = 0\nif r0 == 0 goto +2\nr0 = r10\nexit\nr0 = 0\nexit", nospec: []int{3}},
		{name: "known branch, helper not allowed", asm: "r0 = 0\nif r0 == 0 goto +1\ncall bpf_trace_printk#6\nexit", nospec: []int{2}},
		{name: "known branch, fine", asm: "r0 = 0\nif r0 == 0 goto +1\nr0 = 1\nexit"},
		{name: "known branch, registers unknown", asm: "r1 = 4\nr0 = r10\nif r1 == 4 goto +1\nr0 += r1\nr0 = 0\nexit", nospec: []int{3}},
		{name: "unknown branch", asm: "r0 = *(u32 *)(r1 +0)\nif r0 == 0 goto +1\nr0 = 1\nexit"},
		{name: "known branch, real error", asm: "r0 = 0\nif r0 == 0 goto +1\nexit\nr0 = *(u64 *)(r10 -8)\nexit", err: "invalid read from stack R10 off=-8 size=8"},
		{name: "nested known branches", asm: "r0 = 0\nr1 = 1\nif r0 == 0 goto +1\nr0 = *(u64 *)(r10 -8)\nif r1 == 1 goto +1\nr0 = *(u64 *)(r10 -16)\nr0 = 0\nexit", nospec: []int{3, 5}},
		{name: "null check of a map value", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nif r1 != 0 goto +1\nr0 = *(u64 *)(r1 +0)\nr0 = *(u64 *)(r0 +0)" + out, nospec: []int{9}, nospecResult: []int{0}},
		{name: "map value, variable offset", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 31\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, masked: []int{9}, nospecResult: []int{0}},
		{name: "map value, offset in dst", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 31\nr1 += r0\nr0 = *(u8 *)(r1 +0)" + out, masked: []int{9}, nospecResult: []int{0}},
		{name: "map value, subtraction", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 15\nr0 += 32\nr0 -= r1\nr0 = *(u8 *)(r0 +0)" + out, err: "R0 pointer arithmetic of map value goes out of range, prohibited for !root"},
		{name: "map value, negative offset", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 15\nr1 -= 16\nr0 += 32\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, err: "R0 pointer arithmetic of map value goes out of range, prohibited for !root"},
		{name: "map value, subtraction of a constant register", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = 8\nr0 += 16\nr0 -= r1\nr0 = *(u8 *)(r0 +0)" + out, masked: []int{9}, nospecResult: []int{0}},
		{name: "map value, negative constant register", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = -8\nr0 += 16\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, masked: []int{9}, nospecResult: []int{0}},
		{name: "map value, constant register beyond", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = 48\nr0 += r1" + out, err: "R0 pointer arithmetic of map value goes out of range, prohibited for !root"},
		{name: "map value, constant register below", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = 8\nr0 -= r1" + out, err: "R0 pointer arithmetic of map value goes out of range, prohibited for !root"},
		{name: "stack, register beyond the frame", asm: "r1 = -520\nr2 = r10\nr2 += r1\nr0 = 0\nexit", err: "R2 stack pointer arithmetic goes out of range, prohibited for !root; off=-520"},
		{name: "map value, constant register", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = 8\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, masked: []int{8}, nospecResult: []int{0}},
		{name: "stack, constant register", asm: "r1 = -8\nr2 = r10\nr2 += r1\n*(u64 *)(r2 +0) = 0\nr0 = 0\nexit", masked: []int{2}, nospecResult: []int{3}},
		{name: "map value, mixed signs", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 15\nr1 -= 8\nr0 += r1" + out, err: "R1 has unknown scalar with mixed signed bounds, pointer arithmetic with it prohibited for !root"},
		{name: "map value, offset in dst mixed signs", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 15\nr1 -= 8\nr1 += r0" + out, err: "R0 has unknown scalar with mixed signed bounds, pointer arithmetic with it prohibited for !root"},
		{name: "ctx plus register", asm: "r2 = 4\nr1 += r2\nr0 = 0\nexit", err: "R1 has pointer with unsupported alu operation, pointer arithmetic with it prohibited for !root"},
		{name: "register plus ctx", asm: "r2 = 4\nr2 += r1\nr0 = 0\nexit", err: "R2 has pointer with unsupported alu operation, pointer arithmetic with it prohibited for !root"},
		{name: "map value beyond", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr0 += 47\nr1 = 1\nr0 += r1" + out, err: "R0 pointer arithmetic of map value goes out of range, prohibited for !root"},
		{name: "map value at the end, register", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr0 += 48\nr1 = 0\nr0 += r1" + out, err: "R0 pointer arithmetic of map value goes out of range, prohibited for !root"},
		{name: "paths with different limits", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr2 = *(u32 *)(r0 +4)\nif r2 > 5 goto +2\nr1 &= 7\ngoto +1\nr1 &= 15\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, err: "R0 tried to add from different maps, paths or scalars, pointer arithmetic with it prohibited for !root"},
		{name: "paths with the same limit", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr2 = *(u32 *)(r0 +4)\nif r2 > 5 goto +2\nr1 &= 7\ngoto +1\nr1 &= 7\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, masked: []int{13}, nospecResult: []int{0}},
		{name: "pointer and scalar on one instruction", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr2 = *(u32 *)(r0 +4)\nr1 &= 7\nr3 = r0\nif r2 > 5 goto +1\nr3 = 0\nr3 += r1\nr0 = 0\nexit" + out, err: "R3 tried to add from different maps, paths or scalars, pointer arithmetic with it prohibited for !root"},
		{name: "scalar and pointer on one instruction", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr2 = *(u32 *)(r0 +4)\nr1 &= 7\nr3 = 0\nif r2 > 5 goto +1\nr3 = r0\nr3 += r1\nr0 = 0\nexit" + out, err: "R3 tried to add from different maps, paths or scalars, pointer arithmetic with it prohibited for !root"},
		{name: "masked offset, speculative out of bounds", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 7\nr0 += 40\nr0 += r1\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 max value is outside of the allowed memory range"},
		{name: "spill of a pointer", asm: "*(u64 *)(r10 -8) = r1\nr0 = 0\nexit", nospecResult: []int{0}},
		{name: "store over a spilled pointer", asm: "*(u64 *)(r10 -8) = r1\n*(u64 *)(r10 -8) = 0\nr0 = 0\nexit", nospecResult: []int{0, 1}},
		{name: "store of a scalar", asm: "*(u64 *)(r10 -8) = 0\nr1 = 1\n*(u64 *)(r10 -8) = r1\nr0 = 0\nexit", nospecResult: []int{0}},
		{name: "narrow store, other half unwritten", asm: "*(u32 *)(r10 -8) = 0\nr0 = 0\nexit", nospecResult: []int{0}},
		{name: "narrow store, other half written", asm: "*(u32 *)(r10 -4) = 0\n*(u32 *)(r10 -8) = 0\nr0 = 0\nexit", nospecResult: []int{0}},
		{name: "speculation ends after a barrier store", asm: "r0 = 0\nif r0 == 0 goto +3\n*(u64 *)(r10 -8) = r1\nr0 = *(u64 *)(r10 -16)\nexit\nr0 = 0\nexit", nospecResult: []int{2}},
		{name: "speculative helper call", asm: "r6 = r1\nr0 = 0\nif r0 == 0 goto +3\ncall bpf_get_prandom_u32#7\nr0 = *(u64 *)(r10 -8)\nexit\nr0 = 0\nexit", nospec: []int{4}},
		{name: "speculative helper call writing the stack", asm: "r6 = r1\nr0 = 0\nif r0 == 0 goto +8\nr1 = r6\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_skb_load_bytes#26\nr0 = *(u64 *)(r10 -16)\nexit\nr0 = 0\nexit", nospecResult: []int{8}},
		{name: "stack, variable offset", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 8\nr2 = r10\nr2 += -16\nr2 += r1\nr0 = 0\nexit" + out, err: "R2 variable stack access prohibited for !root, var_off=(0x0; 0x8) off=-16"},
		{name: "known branch, pointer comparison", asm: "r0 = 0\nif r0 == 0 goto +2\nif r1 > r10 goto +0\nexit\nr0 = 0\nexit", nospec: []int{2}},
		{name: "known branch, pointer into a map", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = 0\nif r1 == 0 goto +1\n*(u64 *)(r0 +0) = r10" + out, nospec: []int{9}, nospecResult: []int{0}},
		{name: "known 32-bit branch", asm: "w0 = 5\nif w0 > 4 goto +1\nr0 = *(u64 *)(r10 -8)\nr0 = 0\nexit", nospec: []int{2}},
		{name: "known signed branch", asm: "r0 = -5\nif r0 s< 0 goto +1\nr0 = *(u64 *)(r10 -8)\nr0 = 0\nexit", nospec: []int{2}},
		{name: "known branch on a register pair", asm: "r0 = 1\nr2 = 2\nif r0 < r2 goto +2\nr2 = r10\nr2 += r0\nr0 = 0\nexit", nospec: []int{4}},
		{name: "known branch, division by a zero register", asm: "r0 = 0\nr2 = 0\nif r0 == 0 goto +1\nr0 /= r2\nexit"},
		{name: "bounded scalar decides, unknown bits", asm: "r0 = *(u32 *)(r1 +0)\nr0 &= 7\nif r0 > 7 goto +2\nr0 = 0\nexit\nr0 = *(u64 *)(r10 -8)\nexit", nospec: []int{5}},
		{name: "masked offsets on two paths, the same bounds", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr2 = *(u32 *)(r0 +4)\nr1 &= 15\nif r2 > 5 goto +1\nr2 = 0\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, masked: []int{12}, nospecResult: []int{0}},
		{name: "masked offsets, scalars differ after", maps: arr, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr2 = *(u32 *)(r0 +4)\nr1 &= 15\nr0 += r1\nr2 &= 3\nif r2 > 1 goto +1\nr2 = 1\nr2 += 1\nr0 = *(u8 *)(r0 +0)\nr0 = 0\nexit" + out, masked: []int{10}, nospecResult: []int{0}},
		{name: "speculative path pruned by a speculative one", asm: "r0 = *(u32 *)(r1 +0)\nr2 = 0\nif r0 > 3 goto +1\nr0 = 0\nif r2 == 0 goto +1\nr0 = *(u64 *)(r10 -8)\nr0 = 0\nexit", nospec: []int{5}},
	})
}

// runSpectre verifies each case unprivileged and compares it with the
// kernel's load without capabilities, where there is one.
func runSpectre(t *testing.T, cases []scase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.asm)
			if err != nil {
				t.Fatal(err)
			}
			var infos []verifier.MapInfo
			for i, m := range c.maps {
				infos = append(infos, verifier.MapInfo{Name: m.Name, Spec: m, Index: i})
			}
			typ := ebpf.SocketFilter
			res, err := verifier.Verify(insns, verifier.Options{Type: progType(typ), Maps: infos, Unprivileged: true, LogLevel: 2})
			switch {
			case c.err == "" && err != nil:
				t.Errorf("rejected: %v\n%s", err, res.Log)
			case c.err != "" && err == nil:
				t.Errorf("accepted, want error %q\n%s", c.err, res.Log)
			case c.err != "" && err.Error() != c.err:
				t.Errorf("error %q, want %q\n%s", err, c.err, res.Log)
			}
			if err == nil {
				var nospec, result, masked []int
				for pc, a := range res.Aux {
					if a.Nospec {
						nospec = append(nospec, pc)
					}
					if a.NospecResult {
						result = append(result, pc)
					}
					if a.ALUState != 0 && a.ALUState&verifier.ALUNonPointer == 0 {
						masked = append(masked, pc)
					}
				}
				if !slices.Equal(nospec, c.nospec) || !slices.Equal(result, c.nospecResult) || !slices.Equal(masked, c.masked) {
					t.Errorf("barriers before %v, after %v, masked %v; want %v, %v, %v\n%s", nospec, result, masked, c.nospec, c.nospecResult, c.masked, res.Log)
				}
			}
			klog, n, ran, kerr := kernelLoad(t, true, typ, 0, "", 0, c.maps, nil, false, insns, nil)
			if !ran {
				return
			}
			kernelCompared.Add(1)
			ok := true
			if (kerr == nil) != (err == nil) {
				t.Errorf("kernel verdict differs: kernel %v, bpfvm %v\nkernel log:\n%s", kerr, err, klog)
				ok = false
			} else if err != nil && kernelErrLine(klog) != err.Error() {
				t.Errorf("kernel error %q, bpfvm %q", kernelErrLine(klog), err)
				ok = false
			}
			if n != 0 && res.Stats.Processed != n {
				t.Errorf("processed %d instructions, the kernel %d\nours:\n%s\nkernel:\n%s", res.Stats.Processed, n, res.Log, klog)
				ok = false
			}
			if ok {
				kernelAgreed.Add(1)
			}
		})
	}
}

// kernelErrLine is the line of a kernel log saying why it rejected the
// program: the last one before the statistics.
func kernelErrLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "processed ") || strings.HasPrefix(l, "stack depth ") || strings.HasPrefix(l, "verification time") {
			continue
		}
		return l
	}
	return ""
}
