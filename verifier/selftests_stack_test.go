package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestStack covers the stack: spills and fills of pointers and
// scalars, partial overwrites, zero marks, variable offsets, alignment and
// the 512-byte limit.
func TestSelftestStack(t *testing.T) {
	m := []maps.Spec{val48}
	runCases(t, []vcase{
		// Spill and fill.
		{name: "spill ctx fill deref", asm: "*(u64 *)(r10 -8) = r1\nr1 = 0\nr2 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r2 +12)\nexit"},
		{name: "spill fp fill deref", asm: "r1 = r10\nr1 += -16\n*(u64 *)(r10 -8) = r1\nr2 = *(u64 *)(r10 -8)\n*(u64 *)(r2 +0) = 1\nr0 = *(u64 *)(r10 -16)\nexit"},
		{name: "spill map value fill deref", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u64 *)(r10 -16) = r0\nr1 = *(u64 *)(r10 -16)\nr0 = *(u64 *)(r1 +40)\nout: r0 = 0\nexit"},
		{name: "spill map value fill out of bounds", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u64 *)(r10 -16) = r0\nr1 = *(u64 *)(r10 -16)\nr0 = *(u64 *)(r1 +48)\nout: r0 = 0\nexit", err: "invalid access to map value, value_size=48 off=48 size=8", kmsg: true},
		{name: "spill maybe null then check", maps: m, asm: lookup4 + "*(u64 *)(r10 -16) = r0\nif r0 == 0 goto out\nr1 = *(u64 *)(r10 -16)\nr0 = *(u64 *)(r1 +0)\nout: r0 = 0\nexit"},
		{name: "fill pointer narrow", asm: "*(u64 *)(r10 -8) = r1\nr0 = *(u32 *)(r10 -8)\nexit", err: "invalid size of register fill", kmsg: true},
		{name: "fill pointer narrow high", asm: "*(u64 *)(r10 -8) = r1\nr0 = *(u32 *)(r10 -4)\nexit", err: "invalid size of register fill", kmsg: true},
		{name: "spill pointer narrow", asm: "*(u32 *)(r10 -8) = r1\nr0 = 0\nexit", err: "invalid size of register spill", kmsg: true},
		{name: "spill pointer narrow unaligned", asm: "*(u32 *)(r10 -4) = r10\nr0 = 0\nexit", err: "invalid size of register spill", kmsg: true},
		{name: "spill scalar fill scalar", asm: "r1 = 42\n*(u64 *)(r10 -8) = r1\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "spill const keeps bounds", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = 40\n*(u64 *)(r10 -16) = r1\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "spill bounded keeps bounds", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nr1 &= 31\n*(u64 *)(r10 -16) = r1\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "spill bound learned after fill", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\n*(u64 *)(r10 -16) = r1\nif r1 > 40 goto out\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "narrow spill keeps bounds", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nr1 &= 31\n*(u32 *)(r10 -16) = r1\nr1 = *(u32 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "narrow fill of const spill", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = 40\n*(u64 *)(r10 -16) = r1\nr1 = *(u32 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "st imm keeps const", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u64 *)(r10 -16) = 40\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "narrow spill bounds on linked register", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\n*(u32 *)(r10 -16) = r1\nif r1 > 40 goto out\nr1 = *(u32 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "narrowing spill is not linked", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\n*(u32 *)(r10 -16) = r1\nif r1 > 40 goto out\nr1 = *(u32 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit", err: "R0 unbounded memory access", kmsg: true},
		{name: "narrow fill of narrow spill too wide", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = 40\n*(u32 *)(r10 -16) = r1\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit", err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "narrow fill high half of spill", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = 40\n*(u64 *)(r10 -16) = r1\nr1 = *(u32 *)(r10 -12)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit", err: "R0 unbounded memory access", kmsg: true},
		{name: "u16 st spill", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u16 *)(r10 -16) = 24\nr1 = *(u16 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "narrow spill overwritten", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u32 *)(r10 -16) = 24\n*(u8 *)(r10 -15) = 1\nr1 = *(u32 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit", err: "R0 unbounded memory access", kmsg: true},
		{name: "narrow spill then helper write", typ: ebpf.SchedCLS, maps: m, asm: "r7 = r1\n" + lookup4 + "if r0 == 0 goto out\nr6 = r0\n*(u32 *)(r10 -16) = 24\nr1 = r7\nr2 = 0\nr3 = r10\nr3 += -16\nr4 = 4\ncall bpf_skb_load_bytes#26\nr1 = *(u32 *)(r10 -16)\nr6 += r1\nr0 = *(u64 *)(r6 +0)\nout: r0 = 0\nexit", err: "R6 unbounded memory access", kmsg: true},
		// Partial overwrites.
		{name: "partial overwrite of pointer", asm: "*(u64 *)(r10 -8) = r1\n*(u32 *)(r10 -8) = 0\nr2 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r2 +0)\nexit", err: "R2 invalid mem access 'scalar'", kmsg: true},
		{name: "partial overwrite of pointer then scalar use", asm: "*(u64 *)(r10 -8) = r1\n*(u8 *)(r10 -1) = 0\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "partial overwrite of pointer unpriv", asm: "*(u64 *)(r10 -8) = r1\n*(u32 *)(r10 -8) = 0\nr0 = 0\nexit", err: "attempt to corrupt spilled pointer on stack", unpriv: true},
		{name: "partial overwrite of const", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr1 = 8\n*(u64 *)(r10 -16) = r1\n*(u8 *)(r10 -12) = 1\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit", err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "overwrite spill with scalar", asm: "*(u64 *)(r10 -8) = r1\nr2 = 5\n*(u64 *)(r10 -8) = r2\nr2 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r2 +0)\nexit", err: "R2 invalid mem access 'scalar'", kmsg: true},
		// Zero marks.
		// As the kernel, the first zero is spilled as a 4-byte constant,
		// which the second store scrubs to unknown bytes.
		{name: "zero spill scrubbed by zero bytes", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u32 *)(r10 -16) = 0\n*(u32 *)(r10 -12) = 0\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +40)\nout: r0 = 0\nexit", err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "zero bytes read as zero", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u32 *)(r10 -12) = 0\n*(u32 *)(r10 -20) = 0\nr1 = *(u32 *)(r10 -12)\nr2 = *(u32 *)(r10 -20)\nr1 |= r2\nr0 += r1\nr0 = *(u64 *)(r0 +40)\nout: r0 = 0\nexit"},
		{name: "zero register store", maps: m, asm: lookup4 + "if r0 == 0 goto out\nr2 = 0\n*(u16 *)(r10 -14) = r2\nr1 = *(u16 *)(r10 -14)\nr0 += r1\nr0 = *(u64 *)(r0 +40)\nout: r0 = 0\nexit"},
		{name: "half zero is not zero", maps: m, asm: lookup4 + "if r0 == 0 goto out\n*(u32 *)(r10 -16) = 0\n*(u32 *)(r10 -12) = 1\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u64 *)(r0 +40)\nout: r0 = 0\nexit", err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		// Uninitialised stack.
		{name: "uninit read priv", asm: "r0 = *(u64 *)(r10 -16)\nexit"},
		{name: "uninit read unpriv", asm: "r0 = *(u32 *)(r10 -16)\nr0 = 0\nexit", err: "invalid read from stack R10 off=-16 size=4", unpriv: true},
		{name: "partly uninit read unpriv", asm: "*(u16 *)(r10 -16) = 0\nr0 = *(u32 *)(r10 -16)\nr0 = 0\nexit", err: "invalid read from stack off -16+2 size 4", unpriv: true},
		// Bounds and alignment.
		{name: "deepest slot", asm: "*(u64 *)(r10 -512) = 0\nr0 = *(u64 *)(r10 -512)\nexit"},
		{name: "below the stack", asm: "*(u8 *)(r10 -513) = 0\nr0 = 0\nexit", err: "invalid write to stack R10 off=-513 size=1", kmsg: true},
		{name: "read below the stack", asm: "r0 = *(u8 *)(r10 -513)\nexit", err: "invalid read from stack R10 off=-513 size=1", kmsg: true},
		{name: "read above fp", asm: "r0 = *(u8 *)(r10 +0)\nexit", err: "invalid read from stack R10 off=0 size=1", kmsg: true},
		{name: "straddles fp", asm: "r0 = *(u64 *)(r10 -4)\nexit", err: "misaligned stack access"},
		{name: "misaligned spill", asm: "*(u64 *)(r10 -12) = r1\nr0 = 0\nexit", err: "misaligned stack access off 0+0+-12 size 8", kmsg: true},
		{name: "misaligned u32", asm: "*(u32 *)(r10 -6) = 0\nr0 = 0\nexit", err: "misaligned stack access off 0+0+-6 size 4", kmsg: true},
		{name: "misaligned through pointer", asm: "r1 = r10\nr1 += -9\n*(u16 *)(r1 +0) = 0\nr0 = 0\nexit", err: "misaligned stack access off 0+-9+0 size 2", kmsg: true},
		{name: "aligned through pointer", asm: "r1 = r10\nr1 += -9\n*(u16 *)(r1 +1) = 0\nr0 = 0\nexit"},
		{name: "byte anywhere", asm: "*(u8 *)(r10 -7) = 1\nr0 = *(u8 *)(r10 -7)\nexit"},
		// Variable offsets.
		{name: "var offset write then fixed read", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 8\nr1 = r10\nr1 += -16\nr1 += r2\n*(u64 *)(r1 +0) = 0\nr0 = *(u64 *)(r10 -16)\nexit"},
		{name: "var offset read of init", asm: "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\nr2 = *(u32 *)(r1 +12)\nr2 &= 8\nr1 = r10\nr1 += -16\nr1 += r2\nr0 = *(u64 *)(r1 +0)\nexit"},
		{name: "var offset read unpriv", asm: "*(u64 *)(r10 -16) = 0\nr2 = 8\nr1 = r10\nr1 += -16\nr1 += r2\nr0 = *(u64 *)(r1 +0)\nexit"},
		{name: "var offset misaligned", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 7\nr1 = r10\nr1 += -16\nr1 += r2\n*(u16 *)(r1 +0) = 0\nr0 = 0\nexit", err: "misaligned stack access off (0x0; 0x7)+-16+0 size 2", kmsg: true},
		{name: "var offset pointer write", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 8\nr3 = r10\nr3 += -16\nr3 += r2\n*(u64 *)(r3 +0) = r1\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "var offset pointer write is no spill", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 8\nr3 = r10\nr3 += -16\nr3 += r2\n*(u64 *)(r3 +0) = r1\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "var offset destroys spill", asm: "*(u64 *)(r10 -8) = r1\nr2 = *(u32 *)(r1 +12)\nr2 &= 8\nr3 = r10\nr3 += -16\nr3 += r2\n*(u64 *)(r3 +0) = 0\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "var offset read unbounded", asm: "r2 = *(u32 *)(r1 +12)\nr1 = r10\nr1 += -16\nr1 += r2\nr0 = *(u8 *)(r1 +0)\nexit", err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
		{name: "var offset unpriv", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 8\nr1 = r10\nr1 += -16\nr1 += r2\n*(u8 *)(r1 +0) = 0\nr0 = 0\nexit", err: "variable stack access prohibited for !root", unpriv: true},
		// Pointers to the stack.
		{name: "stack pointer spilled twice", asm: "r1 = r10\nr1 += -8\n*(u64 *)(r10 -16) = r1\nr2 = *(u64 *)(r10 -16)\n*(u64 *)(r10 -24) = r2\nr3 = *(u64 *)(r10 -24)\n*(u64 *)(r3 +0) = 7\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "atomic add on stack", asm: "*(u64 *)(r10 -8) = 0\nr1 = 1\nlock *(u64 *)(r10 -8) += r1\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "atomic on spilled pointer", asm: "*(u64 *)(r10 -8) = r1\nr2 = 1\nlock *(u64 *)(r10 -8) += r2\nr0 = 0\nexit"},
		{name: "atomic fetch on stack", asm: "*(u32 *)(r10 -4) = 5\nw1 = 1\nw1 = atomic_fetch_add((u32 *)(r10 -4), w1)\nr0 = r1\nexit"},
		{name: "atomic misaligned", asm: "*(u64 *)(r10 -8) = 0\nr1 = 1\nlock *(u32 *)(r10 -6) += w1\nr0 = 0\nexit", err: "misaligned stack access"},
	})
}
