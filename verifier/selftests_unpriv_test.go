package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestUnprivileged covers the rules for programs loaded without
// CAP_BPF: no pointer leaks (to maps, the context, helpers, the return
// value), no pointer comparisons except null checks and packet bounds, no
// loops and no function calls. Where the machine lets unprivileged
// programs load (kernel.unprivileged_bpf_disabled = 0), each is compared
// with the kernel loading it from a thread without capabilities, message
// included.
func TestSelftestUnprivileged(t *testing.T) {
	sf := ebpf.SocketFilter
	h := []maps.Spec{hashMap}
	out := "\nout: r0 = 0\nexit"
	u := func(name string, typ ebpf.ProgramType, m []maps.Spec, asm, err string) vcase {
		return vcase{name: name, typ: typ, maps: m, asm: asm, err: err, unpriv: true, kmsg: true}
	}
	runCases(t, []vcase{
		u("return ctx", sf, nil, "r0 = r1\nexit", "R0 leaks addr as return value"),
		u("return fp", sf, nil, "r0 = r10\nexit", "R0 leaks addr as return value"),
		u("return map ptr", sf, h, "r0 = map[fd:0] ll\nexit", "R0 leaks addr as return value"),
		u("return scalar", sf, nil, "r0 = *(u32 *)(r1 +0)\nexit", ""),
		u("pointer into map", sf, h, "r6 = r1\n"+lookup8+"if r0 == 0 goto out\n*(u64 *)(r0 +0) = r6"+out, "R6 leaks addr into map"),
		u("map value into map", sf, h, lookup8+"if r0 == 0 goto out\n*(u64 *)(r0 +0) = r0"+out, "R0 leaks addr into map"),
		u("scalar into map", sf, h, lookup8+"if r0 == 0 goto out\n*(u64 *)(r0 +0) = 1"+out, ""),
		u("pointer into ctx", sf, nil, "*(u64 *)(r1 +48) = r1\nr0 = 0\nexit", "R1 leaks addr into ctx"),
		u("pointer atomic into map", sf, h, lookup8+"if r0 == 0 goto out\nr1 = r10\nlock *(u64 *)(r0 +0) += r1"+out, "R1 leaks addr into mem"),
		u("pointer to helper anything", sf, h, "*(u64 *)(r10 -8) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -24) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = r10\nr3 += -24\nr4 = r10\ncall bpf_map_update_elem#2"+out, "R4 leaks addr into helper function"),
		u("spilled pointer to helper", sf, h, "*(u64 *)(r10 -8) = r1\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1"+out, "invalid read from stack R2 off -8+0 size 8"),
		u("spill and fill", sf, nil, "*(u64 *)(r10 -8) = r1\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", ""),
		u("pointer compare", sf, nil, "r0 = 0\nif r1 > r10 goto +0\nexit", "R10 pointer comparison prohibited"),
		u("pointer compare with scalar", sf, nil, "r0 = 0\nif r1 == 5 goto +0\nexit", "R1 pointer comparison prohibited"),
		u("null check", sf, h, lookup8+"if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)"+out, ""),
		u("null check 32-bit", sf, h, lookup8+"if w0 == 0 goto out\nr0 = 0"+out, "R0 pointer comparison prohibited"),
		u("null check with register", sf, h, lookup8+"r1 = 0\nif r0 == r1 goto out\nr0 = 0"+out, "R0 pointer comparison prohibited"),
		u("packet compare", ebpf.SchedCLS, nil, tcPkt+"r4 = r2\nr4 += 14\nif r4 > r3 goto out\nr0 = *(u8 *)(r2 +0)"+out, ""),
		u("packet compare 32-bit", ebpf.SchedCLS, nil, tcPkt+"r4 = r2\nr4 += 14\nif w4 > w3 goto out\nr0 = 0"+out, "R4 pointer comparison prohibited"),
		u("pointer minus pointer", sf, nil, "r0 = r10\nr0 -= r1\nexit", "R0 pointer -= pointer prohibited"),
		u("pointer 32-bit sub", sf, nil, "r0 = r10\nw0 -= 8\nr0 = 0\nexit", "R0 32-bit pointer arithmetic prohibited"),
		u("scalar and pointer", sf, nil, "r0 = 1\nr0 &= r1\nr0 = 0\nexit", "R0 bitwise operator &= on pointer prohibited"),
		u("pointer neg", sf, nil, "r1 = -r1\nr0 = 0\nexit", "R1 pointer arithmetic prohibited"),
		u("pointer bswap", sf, nil, "r1 = bswap64 r1\nr0 = 0\nexit", "R1 pointer arithmetic prohibited"),
		u("pointer mov32", sf, nil, "w0 = w10\nr0 = 0\nexit", "R10 partial copy of pointer"),
		u("cmpxchg pointer", sf, nil, "*(u64 *)(r10 -8) = 0\nr0 = r1\nr2 = 0\nr0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r2)\nr0 = 0\nexit", "R0 leaks addr into mem"),
		u("uninit stack", sf, nil, "r0 = *(u64 *)(r10 -8)\nr0 = 0\nexit", "invalid read from stack R10 off=-8 size=8"),
		u("uninit stack to helper", sf, h, "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1"+out, "invalid read from stack R2 off=-8 size=8"),
		u("corrupt spilled pointer", sf, nil, "*(u64 *)(r10 -8) = r1\n*(u8 *)(r10 -8) = 0\nr0 = 0\nexit", "attempt to corrupt spilled pointer on stack"),
		u("loop", sf, nil, "r0 = 0\nl: r0 += 1\nif r0 < 4 goto l\nexit", "back-edge from insn 2 to 1"),
		u("function call", sf, nil, "call f\nexit\nf: r0 = 0\nexit", "loading/calling other bpf or kernel functions are allowed for CAP_BPF and CAP_SYS_ADMIN"),
		u("callback", sf, nil, "r1 = 1\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit", "loading/calling other bpf or kernel functions"),
		u("narrow spill not tracked", sf, []maps.Spec{val48}, lookup4+"if r0 == 0 goto out\n*(u32 *)(r10 -16) = 8\nr1 = *(u32 *)(r10 -16)\nr0 += r1\nr0 = *(u8 *)(r0 +0)"+out, "R0 pointer arithmetic of map value goes out of range, prohibited for !root"),
		u("spill of scalar not tracked", sf, []maps.Spec{val48}, lookup4+"if r0 == 0 goto out\nr1 = 8\n*(u64 *)(r10 -16) = r1\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u8 *)(r0 +0)"+out, "math between map_value pointer and register with unbounded min value is not allowed"),
		u("spill of zero kept as zero bytes", sf, []maps.Spec{val48}, lookup4+"if r0 == 0 goto out\nr1 = 0\n*(u64 *)(r10 -16) = r1\nr1 = *(u64 *)(r10 -16)\nr0 += r1\nr0 = *(u8 *)(r0 +0)"+out, ""),
		u("spill of pointer tracked", sf, []maps.Spec{val48}, lookup4+"if r0 == 0 goto out\n*(u64 *)(r10 -16) = r0\nr0 = *(u64 *)(r10 -16)\nr0 = *(u8 *)(r0 +0)"+out, ""),
		u("read below the stack used", sf, nil, "*(u64 *)(r10 -8) = 0\nr0 = *(u64 *)(r10 -16)\nr0 = 0\nexit", "invalid read from stack R10 off=-16 size=8"),
		u("read below the stack used by a helper", sf, h, "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -16\ncall bpf_map_lookup_elem#1"+out, "invalid read from stack R2 off=-16 size=8"),
		u("read of the stack written below", sf, nil, "*(u64 *)(r10 -16) = 0\nr0 = *(u64 *)(r10 -8)\nr0 = 0\nexit", "invalid read from stack off -8+0 size 8"),
		u("ctx var offset", sf, nil, "r2 = *(u32 *)(r1 +0)\nr2 &= 4\nr1 += r2\nr0 = 0\nexit", "R1 has pointer with unsupported alu operation, pointer arithmetic with it prohibited for !root"),
		u("ctx plus constant register", sf, nil, "r2 = 4\nr1 += r2\nr0 = 0\nexit", "R1 has pointer with unsupported alu operation, pointer arithmetic with it prohibited for !root"),
		u("ctx plus constant", sf, nil, "r1 += 4\nr0 = 0\nexit", ""),
		u("stack mixed signs", sf, nil, "r2 = *(u32 *)(r1 +0)\nr2 -= 8\nr1 = r10\nr1 += r2\nr0 = 0\nexit", "R2 has unknown scalar with mixed signed bounds, pointer arithmetic with it prohibited for !root"),
		u("stack above fp", sf, nil, "r2 = 8\nr1 = r10\nr1 += r2\nr0 = 0\nexit", "R1 stack pointer arithmetic goes out of range, prohibited for !root; off=8"),
		u("stack out of range", sf, nil, "r1 = r10\nr1 += -520\nr0 = 0\nexit", "R1 stack pointer arithmetic goes out of range, prohibited for !root; off=-520"),
		u("stack in range", sf, nil, "r2 = -8\nr1 = r10\nr1 += r2\nr0 = 0\nexit", ""),
		u("map value out of range", sf, []maps.Spec{val48}, lookup4+"if r0 == 0 goto out\nr0 += 48"+out, "R0 pointer arithmetic of map value goes out of range, prohibited for !root"),
		u("map value variable in range", sf, []maps.Spec{val48}, lookup4+"if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 31\nr0 += r1\nr0 = *(u8 *)(r0 +0)"+out, ""),
		u("map value variable beyond", sf, []maps.Spec{val48}, lookup4+"if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 63\nr0 += r1"+out, "R0 pointer arithmetic of map value goes out of range, prohibited for !root"),
	})
}
