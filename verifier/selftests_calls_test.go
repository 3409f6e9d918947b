package verifier_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/maps"
)

// chain returns n functions, each calling the next; the last exits.
func chain(n int, body string) string {
	var b strings.Builder
	b.WriteString("call f1\nr0 = 0\nexit\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "f%d: %s", i, body)
		if i < n-1 {
			fmt.Fprintf(&b, "call f%d\n", i+1)
		}
		b.WriteString("r0 = 0\nexit\n")
	}
	return b.String()
}

// TestSelftestCalls covers bpf-to-bpf calls: arguments and return values,
// callee-saved registers, recursion, depth and combined stack limits,
// pointers to the caller's stack, and callbacks.
func TestSelftestCalls(t *testing.T) {
	m := []maps.Spec{val48}
	runCases(t, []vcase{
		{name: "args and return", asm: "r1 = 1\nr2 = 2\ncall f\nr0 += 1\nexit\nf: r0 = r1\nr0 += r2\nexit"},
		{name: "five args", asm: "r1 = 1\nr2 = 2\nr3 = 3\nr4 = 4\nr5 = 5\ncall f\nexit\nf: r0 = r1\nr0 += r5\nexit"},
		{name: "ctx passed", asm: "call f\nexit\nf: r0 = *(u32 *)(r1 +12)\nexit"},
		{name: "callee r6 uninit", asm: "r6 = 1\ncall f\nexit\nf: r0 = r6\nexit", err: "R6 !read_ok", kmsg: true},
		{name: "callee r2 not passed", asm: "r1 = 1\ncall f\nexit\nf: r0 = r2\nexit", err: "R2 !read_ok", kmsg: true},
		{name: "caller r6 kept", asm: "r6 = r1\ncall f\nr0 = *(u32 *)(r6 +12)\nexit\nf: r6 = 5\nr0 = 0\nexit"},
		{name: "caller r1 clobbered", asm: "call f\nr0 = *(u32 *)(r1 +12)\nexit\nf: r0 = 0\nexit", err: "R1 !read_ok", kmsg: true},
		{name: "callee r0 uninit", asm: "call f\nexit\nf: exit", err: "R0 !read_ok", kmsg: true},
		{name: "caller r0 from callee", asm: "call f\nr0 += 1\nexit\nf: r0 = 7\nexit"},
		{name: "return map value", maps: m, asm: "call f\nif r0 == 0 goto out\nr0 = *(u64 *)(r0 +40)\nout: r0 = 0\nexit\nf: " + lookup4 + "exit"},
		{name: "return map value unchecked", maps: m, asm: "call f\nr0 = *(u64 *)(r0 +40)\nr0 = 0\nexit\nf: " + lookup4 + "exit", err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "return ctx", asm: "call f\nr0 = *(u32 *)(r0 +12)\nexit\nf: r0 = r1\nexit"},
		{name: "return stack pointer", asm: "call f\nr0 = 0\nexit\nf: r0 = r10\nr0 += -8\nexit", err: "cannot return stack pointer to the caller", kmsg: true},
		{name: "return caller stack pointer", asm: "r1 = r10\nr1 += -8\ncall f\n*(u64 *)(r0 +0) = 1\nr0 = *(u64 *)(r10 -8)\nexit\nf: r0 = r1\nexit", err: "cannot return stack pointer to the caller", kmsg: true},
		{name: "bounds kept through call", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\nr1 = *(u64 *)(r0 +0)\nr1 &= 31\ncall f\nr6 += r0\nr0 = *(u64 *)(r6 +0)\nout: r0 = 0\nexit\nf: r0 = r1\nexit"},
		{name: "bounds from callee", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\nr1 = *(u64 *)(r0 +0)\ncall f\nr6 += r0\nr0 = *(u64 *)(r6 +0)\nout: r0 = 0\nexit\nf: r0 = r1\nr0 &= 40\nexit"},
		// Stack of the caller.
		{name: "callee writes caller stack", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = *(u64 *)(r10 -8)\nexit\nf: *(u64 *)(r1 +0) = 7\nr0 = 0\nexit"},
		{name: "callee reads caller stack", asm: "*(u64 *)(r10 -8) = 3\nr1 = r10\nr1 += -8\ncall f\nexit\nf: r0 = *(u64 *)(r1 +0)\nexit"},
		{name: "callee spills into caller stack", asm: "r6 = r1\nr1 = r10\nr1 += -8\nr2 = r6\ncall f\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +12)\nexit\nf: *(u64 *)(r1 +0) = r2\nr0 = 0\nexit"},
		{name: "callee out of caller stack", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = 0\nexit\nf: r0 = *(u64 *)(r1 +8)\nexit", err: "invalid read from stack R1 off=0 size=8", kmsg: true},
		{name: "two levels down", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = *(u64 *)(r10 -8)\nexit\nf: call g\nr0 = 0\nexit\ng: *(u64 *)(r1 +0) = 1\nr0 = 0\nexit"},
		{name: "callee stack own", asm: "call f\nexit\nf: *(u64 *)(r10 -512) = 1\nr0 = *(u64 *)(r10 -512)\nexit"},
		{name: "callee stack own and caller", asm: "*(u8 *)(r10 -1) = 0\ncall f\nexit\nf: *(u64 *)(r10 -512) = 1\nr0 = *(u64 *)(r10 -512)\nexit", err: "combined stack size of 2 calls is 528. Too large", kmsg: true},
		{name: "caller stack to helper in callee", maps: m, asm: "*(u32 *)(r10 -4) = 0\nr1 = r10\nr1 += -4\ncall f\nr0 = 0\nexit\nf: r2 = r1\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1\nr0 = 0\nexit"},
		// Limits.
		{name: "recursion", asm: "call f\nexit\nf: call f\nr0 = 0\nexit", err: "recursive call from insn 2 to 2", klog: "the call stack of 9 frames is too deep"},
		{name: "mutual recursion", asm: "call f\nexit\nf: call g\nr0 = 0\nexit\ng: call f\nr0 = 0\nexit", err: "recursive call from insn 5 to 2", klog: "the call stack of 9 frames is too deep"},
		{name: "depth 8", asm: chain(8, "")},
		{name: "depth 9", asm: chain(9, ""), err: "the call stack of 9 frames is too deep", kmsg: true},
		{name: "combined stack", asm: "*(u64 *)(r10 -256) = 0\ncall f\nr0 = 0\nexit\nf: *(u64 *)(r10 -256) = 0\nr0 = 0\nexit"},
		{name: "combined stack too large", asm: "*(u64 *)(r10 -256) = 0\ncall f\nr0 = 0\nexit\nf: *(u64 *)(r10 -264) = 0\nr0 = 0\nexit", err: "combined stack size of 2 calls is 528. Too large", kmsg: true},
		{name: "combined stack deepest path", asm: "*(u64 *)(r10 -128) = 0\ncall f\ncall g\nr0 = 0\nexit\nf: *(u64 *)(r10 -128) = 0\nr0 = 0\nexit\ng: *(u64 *)(r10 -392) = 0\nr0 = 0\nexit", err: "combined stack size of 2 calls is 528. Too large", kmsg: true},
		{name: "combined stack at limit", asm: "*(u64 *)(r10 -128) = 0\ncall f\ncall g\nr0 = 0\nexit\nf: *(u64 *)(r10 -128) = 0\nr0 = 0\nexit\ng: *(u64 *)(r10 -384) = 0\nr0 = 0\nexit"},
		{name: "stack of each frame 8 deep", asm: chain(8, "*(u64 *)(r10 -72) = 0\n"), err: "combined stack size of 8 calls is 560. Too large", kmsg: true},
		{name: "stack of each frame 8 deep at limit", asm: chain(8, "*(u64 *)(r10 -64) = 0\n")},
		// Structure.
		{name: "jump into callee", asm: "if r1 == 0 goto f\ncall f\nr0 = 0\nexit\nf: r0 = 1\nexit", err: "jump out of range from insn 0 to 4", kmsg: true},
		{name: "callee falls off", asm: "call f\nr0 = 0\nexit\nf: r0 = 1", err: "last insn is not an exit or jmp", kmsg: true},
		{name: "callee ends in jump", asm: "call f\nr0 = 0\nexit\nf: r0 = 1\ngoto l\nl: exit"},
		{name: "callee never called", asm: "r0 = 0\nexit\nr0 = 1\nexit", err: "unreachable insn 2", kmsg: true},
		{name: "call into the middle of ld_imm64", asm: "call +2\nexit\nr0 = 0x100000000 ll\nexit", err: "unreachable insn 2", kmsg: true},
		// Callbacks (the kernel comparison gives them BTF func_info,
		// which the kernel wants).
		{name: "bpf_loop", asm: "r1 = 10\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit"},
		{name: "bpf_loop callback returns 2", asm: "r1 = 10\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 2\nexit", err: "At callback return the register R0 has"},
		{name: "bpf_loop callback is scalar", asm: "r1 = 10\nr2 = 0\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit", err: "R2 type=scalar expected=func"},
		{name: "bpf_loop ctx on stack", asm: "*(u64 *)(r10 -8) = 0\nr1 = 10\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nr0 = *(u64 *)(r10 -8)\nexit\ncb: r3 = *(u64 *)(r2 +0)\nr3 += 1\n*(u64 *)(r2 +0) = r3\nr0 = 0\nexit"},
		{name: "bpf_loop ctx out of bounds", asm: "r1 = 10\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = *(u64 *)(r2 +8)\nr0 = 0\nexit", err: "invalid read from stack R2 off=0 size=8"},
		{name: "bpf_loop index unknown", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u64 *)(r10 -16) = 0\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -16\nr4 = 0\ncall bpf_loop#181\nout: r0 = 0\nexit\ncb: r2 += r1\nr0 = *(u8 *)(r2 +0)\nr0 = 0\nexit", err: "math between fp pointer and register with unbounded min value is not allowed"},
	})
}
