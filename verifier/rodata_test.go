package verifier_test

import (
	"testing"

	"github.com/bpfvm/bpfvm/maps"
)

// Loads from a frozen read-only array at a constant offset are constants
// (the kernel's bpf_map_direct_read): the branch they decide has one dead
// side, which may do anything, as the kernel accepts. Each case is compared
// with the kernel, which freezes the maps given values unless unfrozen.
func TestRodataConstants(t *testing.T) {
	// 1, then -1 as a u32, then 0x0807060504030201.
	value := []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8}
	vals := map[int][]byte{0: value}
	ro := []maps.Spec{rodata}
	// bad reads a register never written: what only a dead branch may do.
	const bad = "bad: r0 = *(u64 *)(r3 +0)\nexit\n"
	const bad9 = "R3 !read_ok"
	load := func(ins, cond string) string {
		return "r1 = map_value[fd:0]+0 ll\n" + ins + "\nif " + cond + " goto bad\nr0 = 0\nexit\n" + bad
	}
	// r6 = 4 * rodata[0] (1): an offset within arr's 8-byte value.
	idxOff := "r1 = map_value[fd:0]+0 ll\nr6 = *(u8 *)(r1 +0)\nr6 <<= 2\n*(u32 *)(r10 -4) = 0\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr0 += r6\nr0 = *(u32 *)(r0 +0)\nout: r0 = 0\nexit"
	percpu := maps.Spec{Name: "ropcpu", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: 1, Flags: maps.FlagRdonlyProg}
	runCases(t, []vcase{
		{name: "u32 decides", maps: ro, values: vals, asm: load("r2 = *(u32 *)(r1 +0)", "r2 != 1")},
		{name: "u32 decides taken", maps: ro, values: vals, asm: load("r2 = *(u32 *)(r1 +0)", "r2 == 1"), err: bad9, kmsg: true},
		{name: "unfrozen", maps: ro, values: vals, unfrozen: true, asm: load("r2 = *(u32 *)(r1 +0)", "r2 != 1"), err: bad9, kmsg: true},
		{name: "u8", maps: ro, values: vals, asm: load("r2 = *(u8 *)(r1 +4)", "r2 != 0xff")},
		{name: "u16", maps: ro, values: vals, asm: load("r2 = *(u16 *)(r1 +8)", "r2 != 0x201")},
		// The immediate is sign-extended, the load zero-extended: taken.
		{name: "u32 high bit", maps: ro, values: vals, asm: load("r2 = *(u32 *)(r1 +4)", "r2 != 0xffffffff"), err: bad9, kmsg: true},
		{name: "u32 high bit 32-bit compare", maps: ro, values: vals, asm: load("r2 = *(u32 *)(r1 +4)", "w2 != 0xffffffff")},
		{name: "in a subprogram", maps: ro, values: vals, asm: "r1 = map_value[fd:0]+0 ll\ncall f\nexit\nf: r2 = *(u8 *)(r1 +8)\nif r2 != 1 goto bad\nr0 = 0\nexit\n" + bad},
		{name: "u64", maps: ro, values: vals, asm: "r1 = map_value[fd:0]+0 ll\nr2 = *(u64 *)(r1 +8)\nr4 = 0x0807060504030201 ll\nif r2 != r4 goto bad\nr0 = 0\nexit\n" + bad},
		{name: "u64 across fields", maps: ro, values: vals, asm: "r1 = map_value[fd:0]+0 ll\nr2 = *(u64 *)(r1 +0)\nr4 = 0xffffffff00000001 ll\nif r2 != r4 goto bad\nr0 = 0\nexit\n" + bad},
		{name: "s8", maps: ro, values: vals, asm: load("r2 = *(s8 *)(r1 +4)", "r2 s>= 0")},
		{name: "s16", maps: ro, values: vals, asm: load("r2 = *(s16 *)(r1 +6)", "r2 != -1")},
		{name: "s32", maps: ro, values: vals, asm: load("r2 = *(s32 *)(r1 +4)", "r2 != -1")},
		{name: "s32 positive", maps: ro, values: vals, asm: load("r2 = *(s32 *)(r1 +8)", "r2 != 0x04030201")},
		{name: "load-acquire", maps: ro, values: vals, asm: load("r2 = load_acquire((u32 *)(r1 +0))", "r2 != 1")},
		{name: "pointer offset", maps: ro, values: vals, asm: "r1 = map_value[fd:0]+8 ll\nr2 = *(u8 *)(r1 -4)\nif r2 != 0xff goto bad\nr0 = 0\nexit\n" + bad},
		{name: "constant added", maps: ro, values: vals, asm: "r1 = map_value[fd:0]+0 ll\nr5 = 8\nr1 += r5\nr2 = *(u8 *)(r1 +1)\nif r2 != 2 goto bad\nr0 = 0\nexit\n" + bad},
		{name: "lookup result", maps: ro, values: vals, asm: lookup4 + "if r0 == 0 goto out\nr2 = *(u32 *)(r0 +0)\nif r2 != 1 goto bad\nout: r0 = 0\nexit\n" + bad},
		{name: "variable offset", maps: ro, values: vals, asm: boundedR6 + "r1 = map_value[fd:0]+0 ll\nr1 += r6\nr2 = *(u8 *)(r1 +0)\nif r2 != 1 goto bad\nr0 = 0\nexit\n" + bad, err: bad9, kmsg: true},
		{name: "loop bound", maps: ro, values: map[int][]byte{0: {3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}, asm: "r1 = map_value[fd:0]+0 ll\nr2 = *(u32 *)(r1 +0)\nr0 = 0\nloop: r0 += 1\nif r0 < r2 goto loop\nif r0 != 3 goto bad\nr0 = 0\nexit\n" + bad},
		// A constant bounds an offset into another map's value.
		{name: "bounds an offset", maps: []maps.Spec{rodata, arrayMap}, values: vals, asm: idxOff},
		{name: "bounds an offset unfrozen", maps: []maps.Spec{rodata, arrayMap}, values: vals, unfrozen: true, asm: idxOff, err: "R0 max value is outside of the allowed memory range", kmsg: true},
		{name: "spilled and filled", maps: ro, values: vals, asm: "r1 = map_value[fd:0]+0 ll\nr2 = *(u32 *)(r1 +0)\n*(u64 *)(r10 -8) = r2\nr2 = *(u64 *)(r10 -8)\nif r2 != 1 goto bad\nr0 = 0\nexit\n" + bad},
		{name: "writable map", maps: []maps.Spec{rwdata}, values: vals, asm: "r1 = map_value[fd:0]+0 ll\nr2 = *(u32 *)(r1 +0)\nif r2 != 1 goto bad\nr0 = 0\nexit\n" + bad, err: bad9, kmsg: true},
		{name: "hash map", maps: []maps.Spec{rohash}, values: vals, asm: lookup4 + "if r0 == 0 goto out\nr2 = *(u32 *)(r0 +0)\nif r2 != 1 goto bad\nout: r0 = 0\nexit\n" + bad, err: bad9, kmsg: true},
		{name: "percpu array", maps: []maps.Spec{percpu}, asm: lookup4 + "if r0 == 0 goto out\nr2 = *(u32 *)(r0 +0)\nif r2 != 0 goto bad\nout: r0 = 0\nexit\n" + bad, err: bad9, kmsg: true},
		// The kernel fails the read (array_map_direct_value_addr) without
		// a message: only the verdict is compared.
		{name: "two values", maps: []maps.Spec{rodata2}, values: vals, asm: lookup4 + "if r0 == 0 goto out\nr2 = *(u32 *)(r0 +0)\nout: r0 = 0\nexit", err: "direct read from map rodata2 of 2 values is not supported"},
		{name: "two values unfrozen", maps: []maps.Spec{rodata2}, values: vals, unfrozen: true, asm: lookup4 + "if r0 == 0 goto out\nr2 = *(u32 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "past the end", maps: ro, values: vals, asm: load("r2 = *(u32 *)(r1 +14)", "r2 != 1"), err: "invalid access to map value, value_size=16 off=14 size=4", kmsg: true},
		{name: "store refused", maps: ro, values: vals, asm: "r1 = map_value[fd:0]+0 ll\n*(u32 *)(r1 +0) = 2\nr0 = 0\nexit", err: "write into map forbidden, value_size=16 off=0 size=4", kmsg: true},
	})
}

// Programs cannot change what the verifier takes as constants: every
// program-side write into a map read-only to programs is refused.
func TestRodataProgramWrites(t *testing.T) {
	vals := map[int][]byte{0: make([]byte, 16)}
	ro := []maps.Spec{rodata}
	val := "r1 = map_value[fd:0]+0 ll\n"
	roqueue := maps.Spec{Name: "roqueue", Type: maps.Queue, ValueSize: 8, MaxEntries: 4, Flags: maps.FlagRdonlyProg}
	runCases(t, []vcase{
		{name: "store", maps: ro, values: vals, asm: val + "*(u8 *)(r1 +3) = 1\nr0 = 0\nexit", err: "write into map forbidden", kmsg: true},
		{name: "atomic add", maps: ro, values: vals, asm: val + "r2 = 1\nlock *(u64 *)(r1 +0) += r2\nr0 = 0\nexit", err: "write into map forbidden", kmsg: true},
		{name: "helper writes the value", maps: ro, values: vals, asm: val + "r4 = r1\n*(u64 *)(r10 -8) = 0x3234\nr1 = r10\nr1 += -8\nr2 = 2\nr3 = 0\ncall bpf_strtol#105\nr0 = 0\nexit", err: "write into map forbidden", kmsg: true},
		{name: "snprintf into the value", maps: ro, values: vals, asm: val + "r2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nr0 = 0\nexit", err: "write into map forbidden, value_size=16 off=0 size=8", kmsg: true},
		{name: "map update", maps: ro, values: vals, asm: "*(u32 *)(r10 -4) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -24) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_map_update_elem#2\nr0 = 0\nexit", err: "write into map forbidden", kmsg: true},
		{name: "map update writable", maps: []maps.Spec{rwdata}, asm: "*(u32 *)(r10 -4) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -24) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_map_update_elem#2\nr0 = 0\nexit"},
		{name: "map update bad key first", maps: ro, values: vals, asm: "r1 = map[fd:0] ll\nr2 = 0\nr3 = 0\nr4 = 0\ncall bpf_map_update_elem#2\nr0 = 0\nexit", err: "R2 type=scalar expected=fp", kmsg: true},
		{name: "queue push", maps: []maps.Spec{roqueue}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 0\ncall bpf_map_push_elem#87\nr0 = 0\nexit", err: "write into map forbidden", kmsg: true},
		{name: "queue pop", maps: []maps.Spec{roqueue}, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_pop_elem#88\nr0 = 0\nexit", err: "write into map forbidden", kmsg: true},
		{name: "queue peek", maps: []maps.Spec{roqueue}, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_peek_elem#89\nr0 = 0\nexit"},
		{name: "map delete", maps: ro, values: vals, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_delete_elem#3\nr0 = 0\nexit", err: "write into map forbidden", kmsg: true},
	})
}
