package verifier_test

import (
	"testing"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestControlFlow covers the shape of programs: unreachable code,
// jumps out of range or into an LD_IMM64, fall-through at the end, dead
// branches, bounded and infinite loops, and may_goto.
func TestSelftestControlFlow(t *testing.T) {
	runCases(t, []vcase{
		{name: "jump past end", asm: "r0 = 0\nif r1 == 0 goto +5\nexit", err: "jump out of range from insn 1 to 7", kmsg: true},
		{name: "jump before start", asm: "r0 = 0\ngoto -3\nexit", err: "jump out of range from insn 1 to -1", kmsg: true},
		{name: "jump into ld_imm64", asm: "r0 = 0\nif r1 == 0 goto +1\nr2 = 0x100000000 ll\nexit", err: "jump into the middle of ld_imm64 at insn 3", klog: "jump into the middle of ldimm64 insn 2"},
		{name: "falls off the end", asm: "r0 = 0", err: "last insn is not an exit or jmp", kmsg: true},
		{name: "falls off after branch", asm: "r0 = 0\nif r1 == 0 goto +1\nexit\nr0 = 1", err: "last insn is not an exit or jmp", kmsg: true},
		{name: "unreachable after exit", asm: "r0 = 0\nexit\nr0 = 1\nexit", err: "unreachable insn 2", kmsg: true},
		{name: "unreachable behind goto", asm: "r0 = 0\ngoto +1\nr0 = 1\nexit", err: "unreachable insn 2", kmsg: true},
		{name: "goto +0", asm: "r0 = 0\ngoto +0\nexit"},
		{name: "gotol", asm: "r0 = 0\ngotol +1\nr0 = 1\nexit", err: "unreachable insn 2", kmsg: true},
		{name: "gotol over", asm: "r0 = 0\nif r1 == 0 goto +1\ngotol +1\nr0 = 1\nexit"},
		{name: "dead branch not checked", asm: "r0 = 0\nr1 = 5\nif r1 > 4 goto +1\nr0 = *(u64 *)(r9 +0)\nexit"},
		{name: "dead branch by bounds", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u8 *)(r0 +0)\nif r1 > 255 goto bad\nr0 = 0\nexit\nbad: r0 = *(u64 *)(r9 +0)\nexit\nout: r0 = 0\nexit"},
		{name: "dead branch 32-bit", asm: "w1 = -1\nif w1 s< 0 goto +2\nr0 = *(u64 *)(r9 +0)\nexit\nr0 = 0\nexit"},
		{name: "live branch checked", asm: "r0 = 0\nr1 = *(u32 *)(r1 +12)\nif r1 > 4 goto +1\nr0 = *(u64 *)(r9 +0)\nexit", err: "R9 !read_ok", kmsg: true},
		{name: "jset decided", asm: "r0 = 0\nr1 = 6\nif r1 & 8 goto +1\nexit\nr0 = *(u64 *)(r9 +0)\nexit"},
		// Loops.
		{name: "bounded loop", asm: "r0 = 0\nr1 = 0\nl: r0 += r1\nr1 += 1\nif r1 < 100 goto l\nexit"},
		{name: "bounded loop down", asm: "r1 = 50\nl: r1 -= 1\nif r1 != 0 goto l\nr0 = r1\nexit"},
		{name: "bounded loop with bounds", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = 0\nl: r2 = r0\nr2 += r1\n*(u8 *)(r2 +0) = 0\nr1 += 1\nif r1 < 48 goto l\nout: r0 = 0\nexit"},
		{name: "bounded loop overruns value", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = 0\nl: r2 = r0\nr2 += r1\n*(u8 *)(r2 +0) = 0\nr1 += 1\nif r1 < 49 goto l\nout: r0 = 0\nexit", err: "invalid access to map value, value_size=48 off=48 size=1", kmsg: true},
		{name: "loop bounded by unknown", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 0xff\nr1 = 0\nl: r1 += 1\nif r1 < r2 goto l\nr0 = 0\nexit"},
		{name: "infinite loop", asm: "r0 = 0\nl: goto l", err: "infinite loop detected at insn 1", kmsg: true},
		{name: "infinite loop no change", asm: "r0 = 0\nr1 = 1\nl: r0 += 0\nif r1 == 1 goto l\nexit", err: "infinite loop detected at insn 3", kmsg: true},
		{name: "loop in callee", asm: "call f\nexit\nf: r0 = 0\nl: r0 += 1\nif r0 < 5 goto l\nexit"},
		{name: "nested loops", asm: "r0 = 0\nr1 = 0\no: r2 = 0\ni: r0 += 1\nr2 += 1\nif r2 < 4 goto i\nr1 += 1\nif r1 < 4 goto o\nexit"},
		{name: "may_goto loop", asm: "r0 = 0\nl: may_goto +2\nr0 += 1\ngoto l\nexit"},
		{name: "may_goto loop indexes value", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = 0\nl: may_goto out\nr2 = r0\nr2 += r1\n*(u8 *)(r2 +0) = 0\nr1 += 1\nif r1 < 48 goto l\nout: r0 = 0\nexit"},
		{name: "may_goto loop overruns value", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = 0\nl: may_goto out\nr2 = r0\nr2 += r1\n*(u8 *)(r2 +0) = 0\nr1 += 1\nif r1 < 49 goto l\nout: r0 = 0\nexit", err: "invalid access to map value, value_size=48 off=48 size=1", kmsg: true},
		{name: "may_goto loop over stack", asm: "r1 = r10\nr1 += -64\nr2 = 0\nl: may_goto +5\n*(u64 *)(r1 +0) = r2\nr2 += 1\nr1 += 8\nif r2 < 8 goto l\ngoto +0\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "may_goto skip", asm: "r0 = 0\nmay_goto +1\nr0 = 1\nexit"},
		{name: "may_goto both paths checked", asm: "r0 = 0\nmay_goto +1\nr0 = *(u64 *)(r9 +0)\nexit", err: "R9 !read_ok", kmsg: true},
		// Exit.
		{name: "exit r0 uninit", asm: "exit", err: "R0 !read_ok", kmsg: true},
		{name: "exit r0 pointer priv", asm: "r0 = r10\nexit"},
		{name: "exit r0 uninit on one path", asm: "if r1 == 0 goto +1\nr0 = 0\nexit", err: "R0 !read_ok", kmsg: true},
	})
}
