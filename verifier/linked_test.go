package verifier_test

import (
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/maps"
)

// linkedCase is a program that copies an unknown scalar r1 to r2, moves r2
// by mid, bounds r2 to [0, 7] and then runs check, which uses r1 as an
// offset into the map value in r6 or may branch to bad (an out-of-bounds
// load from it) when r1 is not known to be r2 less the move.
func linkedCase(mid, check string) string {
	tail := ""
	if strings.Contains(check, "bad") {
		tail = "\nbad: r0 = *(u8 *)(r6 +100)\nr0 = 0\nexit"
	}
	return `*(u32 *)(r10 -4) = 0
r1 = map[fd:0] ll
r2 = r10
r2 += -4
call bpf_map_lookup_elem#1
if r0 == 0 goto out
r6 = r0
call bpf_get_prandom_u32
r1 = r0
r2 = r1
` + mid + `
if r2 > 7 goto out
` + check + `
out: r0 = 0
exit` + tail
}

// A register copied and then moved by a constant stays linked to the
// original (the kernel's BPF_ADD_CONST): bounds learned on either apply to
// the other, shifted. Once only, by a 64-bit add or sub of a constant that
// fits 32 bits, and not through a copy of the moved register.
func TestLinkedScalarsWithOffset(t *testing.T) {
	m := []maps.Spec{arrayMap}
	const bad = "invalid access to map value, value_size=8 off=100 size=1"
	runCases(t, []vcase{
		{name: "add -1", maps: m, asm: linkedCase("r2 += -1", "if r1 s< 1 goto bad\nif r1 s> 8 goto bad")},
		{name: "add -1 as index", maps: m, asm: linkedCase("r2 += -1", "r6 += r1\nr0 = *(u8 *)(r6 -1)")},
		{name: "sub 1", maps: m, asm: linkedCase("r2 -= 1", "if r1 s< 1 goto bad\nif r1 s> 8 goto bad")},
		{name: "add 0", maps: m, asm: linkedCase("r2 += 0", "r6 += r1\nr0 = *(u8 *)(r6 +0)")},
		{name: "add const register", maps: m, asm: linkedCase("r3 = -1\nr2 += r3", "r6 += r1\nr0 = *(u8 *)(r6 -1)")},
		{name: "add s32 max", maps: m, asm: linkedCase("r2 += 0x7fffffff", "if r1 s< -0x7fffffff goto bad\nif r1 s> -0x7ffffff8 goto bad")},
		{name: "add s32 min", maps: m, asm: linkedCase("r2 += -0x80000000", "if r1 s> 0x7fffffff goto out\ngoto bad")},
		{name: "sub s32 max", maps: m, asm: linkedCase("r2 -= 0x7fffffff", "if r1 s> 0x7ffffffe goto out\ngoto bad")},
		{name: "through a spill", maps: m, asm: linkedCase("r2 += -1\n*(u64 *)(r10 -16) = r1\nr1 = 0", "r1 = *(u64 *)(r10 -16)\nr6 += r1\nr0 = *(u8 *)(r6 -1)")},
		{name: "bounded by a 32-bit jump", maps: m, asm: linkedCase("r1 &= 0xff\nr2 = r1\nr2 += -1\nif w2 > 7 goto out", "if r1 s< 1 goto bad\nif r1 s> 8 goto bad")},
		{name: "two offsets", maps: m, asm: linkedCase("r2 += -1\nr3 = r1\nr3 += 1", "if r3 s< 2 goto bad\nif r3 s> 9 goto bad")},
		// Not linked: the kernel rejects these too.
		{name: "sub s32 min", maps: m, asm: linkedCase("r2 -= -0x80000000", "if r1 s< -0x7ffffff8 goto out\ngoto bad"), err: bad, kmsg: true},
		{name: "add beyond s32", maps: m, asm: linkedCase("r3 = 0x80000000 ll\nr2 += r3", "if r1 s< -0x7ffffff8 goto out\ngoto bad"), err: bad, kmsg: true},
		{name: "add below s32", maps: m, asm: linkedCase("r3 = -0x80000001 ll\nr2 += r3", "if r1 s> 0x7fffffff goto out\ngoto bad"), err: bad, kmsg: true},
		{name: "moved twice", maps: m, asm: linkedCase("r2 += 1\nr2 += -2", "r6 += r1\nr0 = *(u8 *)(r6 -1)"), err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "alu32 add", maps: m, asm: linkedCase("w2 += -1", "r6 += r1\nr0 = *(u8 *)(r6 -1)"), err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "copy of the moved register", maps: m, asm: linkedCase("r2 += -1\nr3 = r2\nr2 = r3", "r6 += r1\nr0 = *(u8 *)(r6 -1)"), err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "moved copy swapped back", maps: m, asm: linkedCase("r2 += -1\nr7 = r1\nr1 = r2\nr2 = r7", "r6 += r1\nr0 = *(u8 *)(r6 +1)"), err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		// Paths joining with different offsets are different states: the
		// second must not be pruned against the first.
		{name: "offsets differ at a join", maps: m, asm: linkedJoin, err: "R6 max value is outside of the allowed memory range", kmsg: true},
		{name: "linked and not at a join", maps: m, asm: strings.Replace(linkedJoin, "two: r8 += -2", "two: r8 = 3", 1), err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		// Unprivileged programs do not link (CAP_BPF only).
		{name: "unprivileged", maps: m, unpriv: true, asm: linkedCase("r2 += -1", "if r1 s< 1 goto bad\nif r1 s> 8 goto bad"), err: bad},
	})
}

const linkedJoin = `*(u32 *)(r10 -4) = 0
r1 = map[fd:0] ll
r2 = r10
r2 += -4
call bpf_map_lookup_elem#1
if r0 == 0 goto out
r6 = r0
call bpf_get_prandom_u32
r9 = r0
call bpf_get_prandom_u32
r7 = r0
r8 = r7
if r9 == 0 goto two
r8 += -1
goto join
two: r8 += -2
join: if r8 > 7 goto out
r6 += r7
r0 = *(u8 *)(r6 -1)
out: r0 = 0
exit`
