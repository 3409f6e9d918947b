package verifier_test

import (
	"testing"

	"github.com/bpfvm/bpfvm/maps"
)

// Messages of rejected variable-offset map value accesses through r6.
const (
	maxOut    = "R6 max value is outside of the allowed memory range"
	minNeg    = "R6 min value is negative"
	unbounded = "R6 unbounded memory access"
	unbMin    = "math between map_value pointer and register with unbounded min value is not allowed"
)

// TestSelftestALUBounds checks the bounds each ALU operation leaves, as
// seen by a variable-offset access into a 48-byte map value.
func TestSelftestALUBounds(t *testing.T) {
	runCases(t, []vcase{
		valCase("unknown offset", "", unbMin),
		valCase("and 64 in bounds", "r1 &= 47", ""),
		valCase("and 64 out of bounds", "r1 &= 48", maxOut),
		valCase("and 32 in bounds", "w1 &= 47", ""),
		valCase("and 32 out of bounds", "w1 &= 0x30", maxOut),
		valCase("and with register", "r2 = 31\nr1 &= r2", ""),
		valCase("and with negative imm", "r1 &= -16", unbMin),
		valCase("or in bounds", "r1 &= 15\nr1 |= 32", ""),
		valCase("or out of bounds", "r1 &= 31\nr1 |= 32", maxOut),
		valCase("or 32", "w1 &= 7\nw1 |= 40", ""),
		valCase("xor in bounds", "r1 &= 15\nr1 ^= 32", ""),
		valCase("xor out of bounds", "r1 &= 31\nr1 ^= 32", maxOut),
		valCase("xor 32 out of bounds", "w1 &= 31\nw1 ^= 32", maxOut),
		valCase("lsh in bounds", "r1 &= 7\nr1 <<= 2", ""),
		valCase("lsh out of bounds", "r1 &= 15\nr1 <<= 2", maxOut),
		valCase("lsh 32 in bounds", "w1 &= 7\nw1 <<= 2", ""),
		valCase("lsh by register", "r1 &= 7\nr2 = 2\nr1 <<= r2", ""),
		valCase("rsh in bounds", "r1 >>= 59", ""),
		valCase("rsh out of bounds", "r1 >>= 58", maxOut),
		valCase("rsh 32 in bounds", "w1 >>= 27", ""),
		valCase("rsh 32 out of bounds", "w1 >>= 26", maxOut),
		valCase("rsh by unknown register", "r2 = r1\nr2 &= 63\nr1 >>= r2", unbMin),
		valCase("arsh of positive", "r1 &= 0xff\nr1 s>>= 3", ""),
		valCase("arsh of unknown", "r1 s>>= 58", minNeg),
		valCase("arsh 32 of positive", "w1 &= 0x7f\nw1 s>>= 2", ""),
		valCase("arsh 32 sign bit", "w1 s>>= 27", unbounded),
		valCase("add in bounds", "r1 &= 15\nr1 += 16", ""),
		valCase("add out of bounds", "r1 &= 31\nr1 += 17", maxOut),
		valCase("add 32 wraps", "w1 &= 15\nw1 += -1", unbounded),
		valCase("add registers", "r1 &= 15\nr2 = r1\nr1 += r2", ""),
		valCase("sub in bounds", "r1 &= 15\nr2 = 40\nr2 -= r1\nr1 = r2", ""),
		valCase("sub below zero", "r1 &= 15\nr1 -= 1", minNeg),
		valCase("sub 32 below zero", "w1 &= 15\nw1 -= 1", unbounded),
		valCase("mul in bounds", "r1 &= 7\nr1 *= 6", ""),
		valCase("mul out of bounds", "r1 &= 7\nr1 *= 7", maxOut),
		valCase("mul 32", "w1 &= 7\nw1 *= 6", ""),
		valCase("mul by negative", "r1 &= 7\nr1 *= -1", minNeg),
		valCase("neg", "r1 &= 15\nr1 = -r1", minNeg),
		valCase("neg twice", "r1 &= 15\nr1 = -r1\nr1 = -r1", ""),
		valCase("mov32 zero extends", "w1 = w1", unbounded),
		valCase("mov32 of small", "r1 &= 31\nw1 = w1", ""),
		valCase("alu32 clears upper half", "r1 |= -1\nw1 &= 31", ""),
		valCase("const after ops", "r1 = 3\nr1 <<= 4\nr1 -= 1", ""),
		valCase("const out of bounds", "r1 = 3\nr1 <<= 4", "invalid access to map value, value_size=48 off=48 size=1"),
	})
}

// TestSelftestALUDivMod covers division and modulo: the immediate zero
// divisor the verifier rejects, division by a zero register (0, or the
// dividend for modulo, at run time), signed forms, and results the kernel
// never bounds.
func TestSelftestALUDivMod(t *testing.T) {
	runCases(t, []vcase{
		{name: "div imm zero 64", asm: "r0 = 1\nr0 /= 0\nexit", err: "div by zero", kmsg: true},
		{name: "div imm zero 32", asm: "w0 = 1\nw0 /= 0\nexit", err: "div by zero", kmsg: true},
		{name: "mod imm zero", asm: "r0 = 1\nr0 %= 0\nexit", err: "div by zero", kmsg: true},
		{name: "sdiv imm zero", asm: "r0 = 1\nr0 s/= 0\nexit", err: "div by zero", kmsg: true},
		{name: "smod imm zero", asm: "w0 = 1\nw0 s%= 0\nexit", err: "div by zero", kmsg: true},
		{name: "div by zero register", asm: "r0 = 1\nr1 = 0\nr0 /= r1\nexit"},
		{name: "mod by zero register", asm: "r0 = 1\nr1 = 0\nr0 %= r1\nexit"},
		{name: "sdiv by minus one", asm: "r0 = 1\nr0 s/= -1\nexit"},
		// The kernel never computes a division's or modulo's result,
		// even of constants: it is an unknown scalar.
		valCase("div by zero gives unknown", "r1 = 100\nr2 = 0\nr1 /= r2", unbMin),
		valCase("mod by zero gives unknown", "r1 = 100\nr2 = 0\nr1 %= r2", unbMin),
		valCase("mod32 by zero gives unknown", "r1 = -1\nw2 = 0\nw1 %= w2", unbMin),
		valCase("div of constants", "r1 = 96\nr1 /= 2", unbMin),
		valCase("div32 of constants", "w1 = 96\nw1 /= 2", unbMin),
		valCase("sdiv of constants", "r1 = 96\nr1 s/= 2", unbMin),
		valCase("mod of constants", "r1 = 47\nr1 %= 100", unbMin),
		valCase("div by constant register", "r1 = 96\nr2 = 2\nr1 /= r2", unbMin),
		valCase("div bounds", "r1 &= 0xff\nr1 /= 6", unbMin),
		valCase("mod bounds", "r1 %= 48", unbMin),
		valCase("mod bounds bounded after", "r1 %= 48\nif r1 > 47 goto out", ""),
		valCase("div of unknown", "r1 /= 0x100000", unbMin),
		valCase("sdiv of positive", "r1 &= 0xff\nr1 s/= 8", unbMin),
		valCase("smod", "r1 s%= 48", unbMin),
		valCase("mod32 no zero extension", "w1 %= 40", unbMin),
		valCase("mod32 then mov32", "w1 %= 40\nw1 = w1\nif w1 > 47 goto out", ""),
	})
}

// TestSelftestALUConditions checks the bounds learned from comparisons:
// unsigned and signed, 64-bit and 32-bit, with constants and registers.
func TestSelftestALUConditions(t *testing.T) {
	runCases(t, []vcase{
		valCase("jgt", "if r1 > 47 goto out", ""),
		valCase("jgt off by one", "if r1 > 48 goto out", maxOut),
		valCase("jge", "if r1 >= 48 goto out", ""),
		valCase("jlt taken", "if r1 < 48 goto ok\ngoto out\nok:", ""),
		valCase("jle taken", "if r1 <= 47 goto ok\ngoto out\nok:", ""),
		valCase("jle off by one", "if r1 <= 48 goto ok\ngoto out\nok:", maxOut),
		valCase("jsgt leaves negative", "if r1 s> 47 goto out", unbMin),
		valCase("jsgt and jslt", "if r1 s> 47 goto out\nif r1 s< 0 goto out", ""),
		valCase("jsge and jsle", "if r1 s>= 48 goto out\nif r1 s<= -1 goto out", ""),
		valCase("signed lower only", "if r1 s< 0 goto out", unbounded),
		valCase("jgt register", "r2 = 47\nif r1 > r2 goto out", ""),
		valCase("jlt register reversed", "r2 = 48\nif r2 > r1 goto ok\ngoto out\nok:", ""),
		valCase("jeq constant", "if r1 == 40 goto ok\ngoto out\nok:", ""),
		valCase("jne constant", "if r1 != 48 goto out", "invalid access to map value, value_size=48 off=48 size=1"),
		valCase("jset clears", "if r1 & -48 goto out", ""),
		valCase("jgt 32 upper unknown", "if w1 > 47 goto out", unbMin),
		valCase("jgt 32 after u32 load", "r1 = *(u32 *)(r0 +0)\nif w1 > 47 goto out", ""),
		valCase("jslt 32 after u32 load", "r1 = *(u32 *)(r0 +0)\nif w1 s> 47 goto out", "R6 unbounded memory access"),
		valCase("jsgt 32 both", "r1 = *(u32 *)(r0 +0)\nif w1 s> 47 goto out\nif w1 s< 0 goto out", ""),
		valCase("bound on copy", "r2 = r1\nif r2 > 47 goto out", ""),
		valCase("bound on copy after mov32", "w2 = w1\nif r2 > 47 goto out", unbMin),
		valCase("bound lost after add", "r2 = r1\nr2 += 1\nif r2 > 47 goto out", unbMin),
		valCase("lsh 32 s>> 32", "r1 = *(u32 *)(r0 +0)\nif w1 > 47 goto out\nr1 <<= 32\nr1 s>>= 32", ""),
		valCase("lsh 32 s>> 32 negative", "r1 = *(u32 *)(r0 +0)\nr1 <<= 32\nr1 s>>= 32", "value -2147483648 makes map_value pointer be out of bounds"),
		valCase("lsh 32 s>> 32 signed check", "r1 <<= 32\nr1 s>>= 32\nif r1 s< 0 goto out\nif r1 s> 47 goto out", ""),
		valCase("movsx8 negative", "r1 &= 0xff\nr1 = (s8)r1", minNeg),
		valCase("movsx8 in range", "r1 &= 0x7f\nif r1 > 47 goto out\nr1 = (s8)r1", ""),
		valCase("movsx16 32-bit", "r1 &= 0x7fff\nw1 = (s16)w1\nif w1 > 47 goto out", ""),
		valCase("movsx32", "r1 = (s32)r1\nif r1 s< 0 goto out\nif r1 > 47 goto out", ""),
		valCase("movsx32 upper follows bit 31", "r1 = (s32)r1\nif w1 > 47 goto out", ""),
		valCase("sign-extending load", "r1 = *(s8 *)(r0 +0)", minNeg),
		valCase("sign-extending load checked", "r1 = *(s16 *)(r0 +0)\nif r1 s< 0 goto out\nif r1 s> 47 goto out", ""),
		valCase("be16", "r1 = be16 r1\nr1 &= 31", ""),
		valCase("le16 truncates", "r1 = le16 r1", maxOut),
		valCase("le32 of small", "r1 &= 31\nr1 = le32 r1", ""),
		valCase("bswap64", "r1 = bswap64 r1", unbMin),
		valCase("be16 of masked", "r1 &= 0x1f00\nr1 = be16 r1", ""),
	})
}

// TestSelftestALUMisc covers instruction-level rules of ALU operations.
func TestSelftestALUMisc(t *testing.T) {
	runCases(t, []vcase{
		{name: "shift 64 by 63", asm: "r0 = 1\nr0 <<= 63\nr0 = 0\nexit"},
		{name: "shift 32 by 32", asm: "w0 = 1\nw0 <<= 32\nexit", err: "invalid shift 32", kmsg: true},
		{name: "rsh negative", asm: "r0 = 1\nr0 >>= -1\nexit", err: "invalid shift -1", kmsg: true},
		{name: "arsh 64 by 64", asm: "r0 = 1\nr0 s>>= 64\nexit", err: "invalid shift 64", kmsg: true},
		{name: "shift by large register", asm: "r0 = 1\nr1 = 100\nr0 <<= r1\nr0 = 0\nexit"},
		{name: "uninit dst", asm: "r0 += 1\nexit", err: "R0 !read_ok", kmsg: true},
		{name: "uninit src", asm: "r0 = 0\nr0 += r5\nexit", err: "R5 !read_ok", kmsg: true},
		{name: "mov uninit", asm: "r0 = r9\nexit", err: "R9 !read_ok", kmsg: true},
		{name: "write fp", asm: "r10 += 8\nr0 = 0\nexit", err: "frame pointer is read only", kmsg: true},
		{name: "mov to fp", asm: "r10 = r1\nr0 = 0\nexit", err: "frame pointer is read only", kmsg: true},
		{name: "neg 32", asm: "w0 = 5\nw0 = -w0\nexit"},
		{name: "ld_imm64 constant", asm: "r0 = 0x123456789abcdef ll\nexit"},
		{name: "r0 64-bit constant", asm: "r1 = 0x100000000 ll\nr0 = 1\nr0 += r1\nexit"},
		{name: "pointer neg", asm: "r0 = r1\nr0 = -r0\nexit"},
		{name: "pointer bswap", asm: "r0 = r1\nr0 = be64 r0\nexit"},
		{name: "pointer movsx", asm: "r0 = (s32)r1\nexit"},
		{name: "pointer mov32", asm: "w0 = w1\nexit"},
		{name: "pointer neg unpriv", typ: 0, asm: "r0 = r1\nr0 = -r0\nr0 = 0\nexit", err: "R0 pointer arithmetic prohibited", unpriv: true},
		{name: "pointer mov32 unpriv", asm: "w0 = w1\nr0 = 0\nexit", err: "R1 partial copy of pointer", unpriv: true},
		{name: "pointer movsx unpriv", asm: "r0 = (s32)r1\nr0 = 0\nexit", err: "R1 sign-extension part of pointer", unpriv: true},
	})
	_ = maps.Spec{}
}
