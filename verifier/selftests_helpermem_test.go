package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// Helper memory arguments (issue #11): the bounds of stack ranges with
// unbounded variable offsets, NULL with a size range, constant strings,
// writes through read-only pointers and helper writes over iterators. Every
// case is compared with the running kernel.

var (
	// rodata is a frozen single-value array read-only to programs, as
	// clang's .rodata: constant strings live there.
	rodata = maps.Spec{Name: "rodata", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Flags: maps.FlagRdonlyProg}
	// rodata2 is read-only too but has two values: no direct value access.
	rodata2 = maps.Spec{Name: "rodata2", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 2, Flags: maps.FlagRdonlyProg}
	// rohash is a read-only hash map.
	rohash = maps.Spec{Name: "rohash", Type: maps.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 2, Flags: maps.FlagRdonlyProg}
	// rwdata is a writable single-value array.
	rwdata = maps.Spec{Name: "rwdata", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1}
	// ro48 and wo48 are 48-byte hash values read-only and write-only to
	// programs.
	ro48 = maps.Spec{Name: "ro48", Type: maps.Hash, KeySize: 4, ValueSize: 48, MaxEntries: 4, Flags: maps.FlagRdonlyProg}
	wo48 = maps.Spec{Name: "wo48", Type: maps.Hash, KeySize: 4, ValueSize: 48, MaxEntries: 4, Flags: maps.FlagWronlyProg}
	// hash8 has 8-byte keys, room for a helper's s64 result.
	hash8 = maps.Spec{Name: "hash8", Type: maps.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4}
	// queue8 is a queue of 8-byte values.
	queue8 = maps.Spec{Name: "queue8", Type: maps.Queue, ValueSize: 8, MaxEntries: 4}
	// fmtValue holds "%d" at 0, "xy" at 3 and "abc" without a NUL at 13.
	fmtValue = []byte{'%', 'd', 0, 'x', 'y', 0, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c'}
)

// Fragments of the helper memory cases.
const (
	// unboundedR6 makes r6 a scalar in [0, S64_MAX]: adding it to a
	// pointer leaves its maximum offset unbounded.
	unboundedR6 = "r6 = *(u64 *)(r10 -64)\nif r6 s< 0 goto out\n"
	// u32R6 makes r6 an unknown u32.
	u32R6 = "call bpf_get_prandom_u32#7\nw6 = w0\n"
	// boundedR6 makes r6 one of 0 and 8.
	boundedR6 = "call bpf_get_prandom_u32#7\nr6 = r0\nr6 &= 8\n"
	// sizeR7 makes r7 a size in [0, 8].
	sizeR7 = "call bpf_get_prandom_u32#7\nr7 = r0\nr7 &= 8\n"
	// iterNew starts an iterator over [0, 10) at fp-8.
	iterNew = "r1 = r10\nr1 += -8\nr2 = 0\nr3 = 10\ncall bpf_iter_num_new#0\n"
	// iterLoop runs the iterator at fp-8 to its end and destroys it.
	iterLoop = "loop: r1 = r10\nr1 += -8\ncall bpf_iter_num_next#0\nif r0 == 0 goto done\ngoto loop\ndone: r1 = r10\nr1 += -8\ncall bpf_iter_num_destroy#0\nr0 = 0\nexit"
	// out ends a program.
	outExit = "out: r0 = 0\nexit"
)

// csumCall is bpf_csum_diff(from, fromSize, to, toSize, 0) after pre.
func csumCall(pre, from, fromSize, to, toSize string) string {
	return pre + "r1 = " + from + "\nr2 = " + fromSize + "\nr3 = " + to + "\nr4 = " + toSize + "\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit
}

// snprintfCall is bpf_snprintf(str, size, fmt, data, dataLen) after pre,
// with map 0 the format's map.
func snprintfCall(pre, str, size, fmtReg, data, dataLen string) string {
	return pre + "r1 = " + str + "\nr2 = " + size + "\nr3 = " + fmtReg + "\nr4 = " + data + "\nr5 = " + dataLen + "\ncall bpf_snprintf#165\n" + outExit
}

// fmtR8 points r8 at the format "xy" in map 0's value.
const fmtR8 = "r8 = map_value[fd:0]+3 ll\n"

func TestSelftestHelperMemStackBounds(t *testing.T) {
	tc := ebpf.SchedCLS
	loadBytes := func(pre, to, size string) string {
		return pre + "r1 = r9\nr2 = 0\nr3 = " + to + "\nr4 = " + size + "\ncall bpf_skb_load_bytes#26\n" + outExit
	}
	fp16 := "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\n"
	runCases(t, []vcase{
		// The shape of the issue: fp+16 plus [0, S64_MAX] made the end
		// of the range wrap negative.
		{name: "read unbounded above fp", asm: csumCall(unboundedR6+"r1 = r10\nr1 += 16\nr1 += r6\n", "r1", "8", "0", "0"), err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
		{name: "read unbounded below fp", asm: csumCall(unboundedR6+"r1 = r10\nr1 += -16\nr1 += r6\n", "r1", "8", "0", "0"), err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
		{name: "read u32 offset", asm: csumCall(u32R6+"r1 = r10\nr1 += -16\nr1 += r6\n", "r1", "8", "0", "0"), err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
		{name: "read unbounded zero size", asm: csumCall(unboundedR6+"r1 = r10\nr1 += 16\nr1 += r6\n", "r1", "0", "0", "0"), err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
		{name: "read unbounded var size", asm: csumCall(unboundedR6+sizeR7+"r1 = r10\nr1 += 16\nr1 += r6\n", "r1", "r7", "0", "0"), err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
		{name: "read second arg unbounded", asm: csumCall(fp16+unboundedR6+"r3 = r10\nr3 += 16\nr3 += r6\n", "0", "0", "r3", "8"), err: "invalid unbounded variable-offset read from stack R3", kmsg: true},
		{name: "read bounded", asm: csumCall(fp16+boundedR6+"r1 = r10\nr1 += -16\nr1 += r6\n", "r1", "8", "0", "0")},
		{name: "read bounded past fp", asm: csumCall(fp16+boundedR6+"r1 = r10\nr1 += -8\nr1 += r6\n", "r1", "8", "0", "0"), err: "invalid variable-offset read from stack R1 var_off=(0x0; 0x8) off=-8 size=8", kmsg: true},
		{name: "read bounded below stack", asm: csumCall(boundedR6+"r1 = r10\nr1 += -520\nr1 += r6\n", "r1", "8", "0", "0"), err: "invalid variable-offset read from stack R1 var_off=(0x0; 0x8) off=-520 size=8", kmsg: true},
		{name: "read const below stack", asm: csumCall("r1 = r10\nr1 += -516\n", "r1", "8", "0", "0"), err: "invalid read from stack R1 off=-516 size=8", kmsg: true},
		{name: "read const at fp", asm: csumCall("", "r10", "4", "0", "0"), err: "invalid read from stack R1 off=0 size=4", kmsg: true},
		{name: "read zero size at fp", asm: csumCall("", "r10", "0", "0", "0"), err: "invalid read from stack R1 off=0 size=0", kmsg: true},
		{name: "read zero size in stack", asm: csumCall("r1 = r10\nr1 += -8\n", "r1", "0", "0", "0")},
		{name: "read zero size below stack", asm: csumCall("r1 = r10\nr1 += -520\n", "r1", "0", "0", "0"), err: "invalid read from stack R1 off=-520 size=0", kmsg: true},
		{name: "read var size", asm: csumCall(fp16+sizeR7+"r1 = r10\nr1 += -8\n", "r1", "r7", "0", "0")},
		{name: "read var size past fp", asm: csumCall(fp16+sizeR7+"r1 = r10\nr1 += -4\n", "r1", "r7", "0", "0"), err: "invalid read from stack R1 off=-4 size=8", kmsg: true},
		// Writes: skb_load_bytes (uninitialised memory).
		{name: "write unbounded above fp", typ: tc, asm: loadBytes("r9 = r1\n"+unboundedR6+"r3 = r10\nr3 += 16\nr3 += r6\n", "r3", "8"), err: "invalid unbounded variable-offset write to stack R3", kmsg: true},
		{name: "write unbounded below fp", typ: tc, asm: loadBytes("r9 = r1\n"+unboundedR6+"r3 = r10\nr3 += -64\nr3 += r6\n", "r3", "8"), err: "invalid unbounded variable-offset write to stack R3", kmsg: true},
		{name: "write u32 offset", typ: tc, asm: loadBytes("r9 = r1\n"+u32R6+"r3 = r10\nr3 += -64\nr3 += r6\n", "r3", "4"), err: "invalid unbounded variable-offset write to stack R3", kmsg: true},
		{name: "write bounded", typ: tc, asm: loadBytes("r9 = r1\n"+fp16+boundedR6+"r3 = r10\nr3 += -16\nr3 += r6\n", "r3", "8")},
		{name: "write bounded uninit", typ: tc, asm: loadBytes("r9 = r1\n"+boundedR6+"r3 = r10\nr3 += -16\nr3 += r6\n", "r3", "8")},
		{name: "write bounded past fp", typ: tc, asm: loadBytes("r9 = r1\n"+boundedR6+"r3 = r10\nr3 += -12\nr3 += r6\n", "r3", "8"), err: "invalid variable-offset write to stack R3 var_off=(0x0; 0x8) off=-12 size=8", kmsg: true},
		{name: "write const past fp", typ: tc, asm: loadBytes("r9 = r1\n", "r10", "1"), err: "invalid write to stack R3 off=0 size=1", kmsg: true},
		{name: "write const below stack", typ: tc, asm: loadBytes("r9 = r1\nr3 = r10\nr3 += -513\n", "r3", "2"), err: "invalid write to stack R3 off=-513 size=2", kmsg: true},
		// Map keys and values on the stack.
		{name: "update key unbounded", maps: []maps.Spec{hashMap}, asm: unboundedR6 + "*(u64 *)(r10 -8) = 0\nr2 = r10\nr2 += 16\nr2 += r6\nr1 = map[fd:0] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_map_update_elem#2\n" + outExit, err: "invalid unbounded variable-offset read from stack R2", kmsg: true},
		{name: "update value unbounded", maps: []maps.Spec{hashMap}, asm: unboundedR6 + "*(u64 *)(r10 -8) = 0\nr3 = r10\nr3 += 16\nr3 += r6\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr4 = 0\ncall bpf_map_update_elem#2\n" + outExit, err: "invalid unbounded variable-offset read from stack R3", kmsg: true},
		{name: "lookup key unbounded", maps: []maps.Spec{hashMap}, asm: unboundedR6 + "r2 = r10\nr2 += 16\nr2 += r6\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1\n" + outExit, err: "invalid unbounded variable-offset read from stack R2", kmsg: true},
		{name: "lookup key bounded", maps: []maps.Spec{hashMap}, asm: "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\n" + boundedR6 + "r2 = r10\nr2 += -16\nr2 += r6\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1\n" + outExit},
		{name: "pop value unbounded", maps: []maps.Spec{queue8}, asm: unboundedR6 + "r2 = r10\nr2 += 16\nr2 += r6\nr1 = map[fd:0] ll\ncall bpf_map_pop_elem#88\n" + outExit, err: "invalid unbounded variable-offset write to stack R2", kmsg: true},
		{name: "strtol result misaligned", asm: "*(u64 *)(r10 -16) = 0\nr4 = r10\nr4 += -12\nr1 = r10\nr1 += -16\nr2 = 4\nr3 = 0\ncall bpf_strtol#105\n" + outExit, err: "misaligned stack access off 0+-12+0 size 8", kmsg: true},
		{name: "strtol result var offset", asm: "*(u64 *)(r10 -24) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\n" + boundedR6 + "r4 = r10\nr4 += -16\nr4 += r6\nr1 = r10\nr1 += -24\nr2 = 4\nr3 = 0\ncall bpf_strtol#105\n" + outExit},
		{name: "strtol result var offset misaligned", asm: "*(u64 *)(r10 -24) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\ncall bpf_get_prandom_u32#7\nr6 = r0\nr6 &= 4\nr4 = r10\nr4 += -16\nr4 += r6\nr1 = r10\nr1 += -24\nr2 = 4\nr3 = 0\ncall bpf_strtol#105\n" + outExit, err: "misaligned stack access off (0x0; 0x4)+-16+0 size 8", kmsg: true},
		{name: "strtol result misaligned value", maps: []maps.Spec{val48}, asm: "*(u64 *)(r10 -16) = 0\n" + lookup4 + "if r0 == 0 goto out\nr4 = r0\nr4 += 4\nr1 = r10\nr1 += -16\nr2 = 4\nr3 = 0\ncall bpf_strtol#105\n" + outExit, err: "misaligned value access off 0+4+0 size 8", kmsg: true},
		{name: "strtol result unbounded", asm: "*(u64 *)(r10 -16) = 0\n" + unboundedR6 + "r4 = r10\nr4 += 16\nr4 += r6\nr1 = r10\nr1 += -16\nr2 = 4\nr3 = 0\ncall bpf_strtol#105\n" + outExit, err: "invalid unbounded variable-offset write to stack R4", kmsg: true},
		{name: "snprintf str unbounded", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: snprintfCall(fmtR8+unboundedR6+"r1 = r10\nr1 += 16\nr1 += r6\n", "r1", "8", "r8", "0", "0"), err: "invalid unbounded variable-offset write to stack R1", kmsg: true},
		{name: "printk fmt unbounded", asm: unboundedR6 + "r1 = r10\nr1 += 16\nr1 += r6\nr2 = 8\ncall bpf_trace_printk#6\n" + outExit, err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
		{name: "ringbuf output unbounded", maps: []maps.Spec{ringbuf}, asm: unboundedR6 + "r2 = r10\nr2 += 16\nr2 += r6\nr1 = map[fd:0] ll\nr3 = 8\nr4 = 0\ncall bpf_ringbuf_output#130\n" + outExit, err: "invalid unbounded variable-offset read from stack R2", kmsg: true},
		// Map values: a negative minimum is refused only when the sum
		// is; the maximum (the minimum's u64 view) is unbounded then.
		{name: "value negative var offset", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr0 &= 7\nr0 -= 4\nr6 += 8\nr6 += r0\nr0 = *(u8 *)(r6 +0)\n" + outExit, err: "R6 unbounded memory access, make sure to bounds check any such access", kmsg: true},
		{name: "value negative var offset helper", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr0 &= 7\nr0 -= 4\nr6 += 8\nr6 += r0\nr1 = r6\nr2 = 4\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit, err: "R1 unbounded memory access, make sure to bounds check any such access", kmsg: true},
		{name: "value negative var offset below", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr0 &= 7\nr0 -= 4\nr6 += 2\nr6 += r0\nr1 = r6\nr2 = 4\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit, err: "R1 min value is negative, either use unsigned index or do a if (index >=0) check.", kmsg: true},
		{name: "value var offset past end helper", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr0 &= 7\nr6 += 40\nr6 += r0\nr1 = r6\nr2 = 4\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit, err: "R1 max value is outside of the allowed memory range", kmsg: true},
		{name: "value var offset zero size past end", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr0 &= 7\nr6 += 44\nr6 += r0\nr1 = r6\nr2 = 0\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit, err: "R1 max value is outside of the allowed memory range", kmsg: true},
		{name: "ringbuf mem var offset", maps: []maps.Spec{ringbuf}, asm: "r1 = map[fd:0] ll\nr2 = 16\nr3 = 0\ncall bpf_ringbuf_reserve#131\nif r0 == 0 goto out\nr6 = r0\ncall bpf_get_prandom_u32#7\nr0 &= 8\nr7 = r6\nr7 += r0\nr1 = r7\nr2 = 9\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_discard#133\n" + outExit, err: "R1 max value is outside of the allowed memory range", kmsg: true},
		// Direct stack accesses say the same.
		{name: "store unbounded", asm: unboundedR6 + "r1 = r10\nr1 += 16\nr1 += r6\n*(u8 *)(r1 +0) = 0\n" + outExit, err: "invalid unbounded variable-offset write to stack R1", kmsg: true},
		{name: "load unbounded", asm: unboundedR6 + "r1 = r10\nr1 += -16\nr1 += r6\nr0 = *(u8 *)(r1 +0)\n" + outExit, err: "invalid unbounded variable-offset read from stack R1", kmsg: true},
	})
}

func TestSelftestHelperMemNull(t *testing.T) {
	fp16 := "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\nr6 = r10\nr6 += -16\n"
	runCases(t, []vcase{
		// The shape of the issue: NULL passes with a size of [0, N].
		{name: "csum from null var size", asm: csumCall(sizeR7, "0", "r7", "0", "0"), err: "R1 type=scalar expected=fp", kmsg: true},
		{name: "csum to null var size", asm: csumCall(fp16+sizeR7, "r6", "8", "0", "r7"), err: "R3 type=scalar expected=fp", kmsg: true},
		{name: "csum from null size 1", asm: csumCall("", "0", "1", "0", "0"), err: "R1 type=scalar expected=fp", kmsg: true},
		{name: "csum from null size 0", asm: csumCall("", "0", "0", "0", "0")},
		{name: "csum from one size 0", asm: csumCall("", "1", "0", "0", "0"), err: "R1 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "csum from unknown size 0", asm: csumCall(u32R6, "r6", "0", "0", "0"), err: "R1 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		// As in the kernel, a pointer that may be NULL passes where NULL
		// may: the helper checks.
		{name: "csum from maybe-null value", maps: []maps.Spec{val48}, asm: lookup4 + "r1 = r0\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit"},
		{name: "csum from maybe-null value past end", maps: []maps.Spec{val48}, asm: lookup4 + "r1 = r0\nr2 = 52\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit", err: "invalid access to memory, mem_size=48 off=0 size=52", kmsg: true},
		{name: "snprintf into maybe-null value", maps: []maps.Spec{val48, rodata}, values: map[int][]byte{1: fmtValue}, asm: lookup4 + "r1 = r0\nr2 = 48\nr3 = map_value[fd:1]+3 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\n" + outExit},
		{name: "update from maybe-null value", maps: []maps.Spec{val48}, asm: lookup4 + "r3 = r0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\nr4 = 0\ncall bpf_map_update_elem#2\n" + outExit, err: "R3 type=map_value_or_null expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "csum from ctx", asm: csumCall("", "r1", "0", "0", "0"), err: "R1 type=ctx expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "snprintf str null var size", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: snprintfCall(fmtR8+sizeR7, "0", "r7", "r8", "0", "0"), err: "R1 type=scalar expected=fp", kmsg: true},
		{name: "snprintf str null size 0", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: snprintfCall(fmtR8, "0", "0", "r8", "0", "0")},
		{name: "snprintf data null var size", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: snprintfCall(fmtR8+sizeR7+"*(u64 *)(r10 -8) = 0\nr9 = r10\nr9 += -8\n", "r9", "8", "r8", "0", "r7"), err: "R4 type=scalar expected=fp", kmsg: true},
		{name: "vprintk data null var size", asm: sizeR7 + "*(u64 *)(r10 -8) = 0x6425\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr4 = r7\ncall bpf_trace_vprintk#177\n" + outExit, err: "R3 type=scalar expected=fp", kmsg: true},
		{name: "vprintk data null size 0", asm: "*(u64 *)(r10 -8) = 0x6425\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr4 = 0\ncall bpf_trace_vprintk#177\n" + outExit},
		// Arguments that may not be NULL at all.
		{name: "ringbuf output null size 0", maps: []maps.Spec{ringbuf}, asm: "r1 = map[fd:0] ll\nr2 = 0\nr3 = 0\nr4 = 0\ncall bpf_ringbuf_output#130\n" + outExit, err: "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "ringbuf output null var size", maps: []maps.Spec{ringbuf}, asm: sizeR7 + "r1 = map[fd:0] ll\nr2 = 0\nr3 = r7\nr4 = 0\ncall bpf_ringbuf_output#130\n" + outExit, err: "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "printk null", asm: "r1 = 0\nr2 = 8\ncall bpf_trace_printk#6\n" + outExit, err: "R1 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "strtol buf null", asm: "r1 = 0\nr2 = 4\nr3 = 0\nr4 = r10\nr4 += -8\ncall bpf_strtol#105\n" + outExit, err: "R1 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "strtol result null", asm: "*(u64 *)(r10 -16) = 0\nr1 = r10\nr1 += -16\nr2 = 4\nr3 = 0\nr4 = 0\ncall bpf_strtol#105\n" + outExit, err: "R4 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "lookup key null", maps: []maps.Spec{hashMap}, asm: "r1 = map[fd:0] ll\nr2 = 0\ncall bpf_map_lookup_elem#1\n" + outExit, err: "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value", kmsg: true},
		{name: "update value null", maps: []maps.Spec{hashMap}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 0\nr4 = 0\ncall bpf_map_update_elem#2\n" + outExit, err: "R3 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value", kmsg: true},
		{name: "load bytes null", typ: ebpf.SchedCLS, asm: "r2 = 0\nr3 = 0\nr4 = 8\ncall bpf_skb_load_bytes#26\n" + outExit, err: "R3 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
	})
}

func TestSelftestHelperMemConstStr(t *testing.T) {
	vals := map[int][]byte{0: fmtValue}
	str := "*(u64 *)(r10 -8) = 0\nr9 = r10\nr9 += -8\n"
	fmtAt := func(m, off string) string { return "r8 = map_value[fd:" + m + "]+" + off + " ll\n" }
	runCases(t, []vcase{
		{name: "const offset", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "3"), "r9", "8", "r8", "0", "0")},
		{name: "const offset with argument", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+"*(u64 *)(r10 -16) = 7\nr7 = r10\nr7 += -16\n"+fmtAt("0", "0"), "r9", "8", "r8", "r7", "8")},
		{name: "const offset at nul", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "2"), "r9", "8", "r8", "0", "0")},
		{name: "const offset at last nul", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "12"), "r9", "8", "r8", "0", "0")},
		{name: "no nul from offset", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "13"), "r9", "8", "r8", "0", "0"), err: "string is not zero-terminated", kmsg: true},
		{name: "no nul at all", maps: []maps.Spec{rodata}, values: map[int][]byte{0: []byte("0123456789abcdef")}, asm: snprintfCall(str+fmtAt("0", "0"), "r9", "8", "r8", "0", "0"), err: "string is not zero-terminated", kmsg: true},
		{name: "offset added", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "3")+"r8 += 10\n", "r9", "8", "r8", "0", "0"), err: "string is not zero-terminated", kmsg: true},
		{name: "offset at end", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "3")+"r8 += 13\n", "r9", "8", "r8", "0", "0"), err: "invalid access to map value, value_size=16 off=16 size=0", kmsg: true},
		{name: "offset past end", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "3")+"r8 += 17\n", "r9", "8", "r8", "0", "0"), klog: "invalid access to map value", err: "invalid access to map value"},
		{name: "negative offset", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+fmtAt("0", "0")+"r8 += -1\n", "r9", "8", "r8", "0", "0"), klog: "invalid access to map value", err: "invalid access to map value"},
		{name: "variable offset", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+boundedR6+fmtAt("0", "3")+"r8 += r6\n", "r9", "8", "r8", "0", "0"), err: "R3 is not a constant address'", kmsg: true},
		{name: "writable map", maps: []maps.Spec{rwdata}, values: vals, asm: snprintfCall(str+fmtAt("0", "3"), "r9", "8", "r8", "0", "0"), err: "R3 does not point to a readonly map'", kmsg: true},
		// Not frozen: the contents may change, so no constant string
		// (bpf_map_is_rdonly), checked before anything else.
		{name: "unfrozen", maps: []maps.Spec{rodata}, values: vals, unfrozen: true, asm: snprintfCall(str+fmtAt("0", "3"), "r9", "8", "r8", "0", "0"), err: "R3 does not point to a readonly map'", kmsg: true},
		{name: "unfrozen variable offset", maps: []maps.Spec{rodata}, values: vals, unfrozen: true, asm: snprintfCall(str+boundedR6+fmtAt("0", "3")+"r8 += r6\n", "r9", "8", "r8", "0", "0"), err: "R3 does not point to a readonly map'", kmsg: true},
		{name: "unfrozen no nul", maps: []maps.Spec{rodata}, values: map[int][]byte{0: []byte("0123456789abcdef")}, unfrozen: true, asm: snprintfCall(str+fmtAt("0", "0"), "r9", "8", "r8", "0", "0"), err: "R3 does not point to a readonly map'", kmsg: true},
		{name: "unfrozen two values", maps: []maps.Spec{rodata2}, values: vals, unfrozen: true, asm: snprintfCall(str+lookup4+"if r0 == 0 goto out\nr8 = r0\nr8 += 3\n", "r9", "8", "r8", "0", "0"), err: "R3 does not point to a readonly map'", kmsg: true},
		{name: "unfrozen hash map", maps: []maps.Spec{rohash}, values: vals, unfrozen: true, asm: snprintfCall(str+lookup4+"if r0 == 0 goto out\nr8 = r0\nr8 += 3\n", "r9", "8", "r8", "0", "0"), err: "R3 does not point to a readonly map'", kmsg: true},
		{name: "two values", maps: []maps.Spec{rodata2}, values: vals, asm: snprintfCall(str+lookup4+"if r0 == 0 goto out\nr8 = r0\nr8 += 3\n", "r9", "8", "r8", "0", "0"), err: "direct value access on string failed", kmsg: true},
		{name: "hash map", maps: []maps.Spec{rohash}, values: vals, asm: snprintfCall(str+lookup4+"if r0 == 0 goto out\nr8 = r0\nr8 += 3\n", "r9", "8", "r8", "0", "0"), err: "no direct value access support for this map type", kmsg: true},
		{name: "lookup result", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+lookup4+"if r0 == 0 goto out\nr8 = r0\nr8 += 3\n", "r9", "8", "r8", "0", "0")},
		{name: "const key lookup result", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+lookup4+"r8 = r0\nr8 += 3\n", "r9", "8", "r8", "0", "0")},
		{name: "maybe-null lookup result", maps: []maps.Spec{rodata}, values: vals, asm: snprintfCall(str+"call bpf_get_prandom_u32#7\n*(u32 *)(r10 -4) = r0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr8 = r0\n*(u64 *)(r10 -16) = 7\nr7 = r10\nr7 += -16\n", "r9", "8", "r8", "r7", "8"), err: "R3 type=map_value_or_null expected=map_value", kmsg: true},
		{name: "stack", asm: snprintfCall(str+"*(u64 *)(r10 -16) = 0\nr8 = r10\nr8 += -16\n", "r9", "8", "r8", "0", "0"), err: "R3 type=fp expected=map_value", kmsg: true},
		{name: "null", asm: snprintfCall(str, "r9", "8", "0", "0", "0"), err: "R3 type=scalar expected=map_value", kmsg: true},
	})
}

// bpf_snprintf's format is checked against its data at verification.
func TestSelftestHelperMemSnprintfFormat(t *testing.T) {
	var cases []vcase
	for _, c := range []struct {
		format string
		nargs  int
		ok     bool
	}{
		{"xy", 0, true}, {"%d", 0, false}, {"%d", 1, true}, {"%d%d", 1, false}, {"%d%d", 2, true},
		{"%%", 0, true}, {"100%", 1, false}, {"%5d", 1, true}, {"%-08lld", 1, true}, {"%+ 3lx", 1, true},
		{"%llX", 1, true}, {"%lli", 1, true}, {"%lu", 1, true}, {"%q", 1, false}, {"%ld", 1, true}, {"%lc", 1, false},
		{"%s", 1, true}, {"%s.", 1, true}, {"%sx", 1, false}, {"%c", 1, true}, {"%5c", 1, true},
		{"%p", 1, true}, {"%pK", 1, true}, {"%px", 1, true}, {"%ps", 1, true}, {"%pS", 1, true}, {"%pB", 1, true},
		{"%pks", 1, true}, {"%pus", 1, true}, {"%pksx", 1, false}, {"%pI4", 1, true}, {"%pi6", 1, true}, {"%pI5", 1, false},
		{"%pZ", 1, false}, {"%p-", 1, true}, {"a\tb", 0, true}, {"a\x01", 0, false}, {"\x7f", 0, false}, {"\x80", 0, true}, {"\x9f", 0, true}, {"\xa0", 0, true}, {"\xc3", 0, true}, {"\xff", 0, true}, {"\x80%d", 0, false}, {"%d\x80", 1, true}, {"%.2d", 1, false},
	} {
		value := make([]byte, 16)
		copy(value, c.format)
		vc := vcase{
			name: fmt.Sprintf("%q with %d", c.format, c.nargs), maps: []maps.Spec{rodata}, values: map[int][]byte{0: value},
			asm: snprintfCall("*(u64 *)(r10 -8) = 0\nr9 = r10\nr9 += -8\n*(u64 *)(r10 -112) = 0\n*(u64 *)(r10 -104) = 0\nr7 = r10\nr7 += -112\nr8 = map_value[fd:0]+0 ll\n", "r9", "8", "r8", "r7", fmt.Sprint(8*c.nargs)),
		}
		if !c.ok {
			vc.err, vc.kmsg = "Invalid format string", true
		}
		cases = append(cases, vc)
	}
	cases = append(cases,
		vcase{name: "data length not a multiple of 8", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: snprintfCall("*(u64 *)(r10 -8) = 0\nr9 = r10\nr9 += -8\n*(u64 *)(r10 -16) = 0\nr7 = r10\nr7 += -16\nr8 = map_value[fd:0]+0 ll\n", "r9", "8", "r8", "r7", "4"), err: "not a multiple of 8"},
		vcase{name: "data length variable", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: snprintfCall("*(u64 *)(r10 -8) = 0\nr9 = r10\nr9 += -8\n*(u64 *)(r10 -16) = 0\nr7 = r10\nr7 += -16\nr8 = map_value[fd:0]+0 ll\ncall bpf_get_prandom_u32#7\nr6 = r0\nr6 &= 8\n", "r9", "8", "r8", "r7", "r6"), err: "Invalid format string", kmsg: true},
	)
	runCases(t, cases)
}

func TestSelftestHelperMemReadOnly(t *testing.T) {
	tc := ebpf.SchedCLS
	// forEach calls bpf_for_each_map_elem on map 0 with a callback whose
	// body is cb (key in r2, value in r3), returning 0.
	forEach := func(cb string) string {
		return "r1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_for_each_map_elem#164\nr0 = 0\nexit\ncb: " + cb + "\nr0 = 0\nexit"
	}
	runCases(t, []vcase{
		// The shape of the issue: a helper writes the key. The kernel
		// needs BTF for callbacks, which these programs lack: its
		// message is from check_helper_mem_access.
		{name: "strtol into key", maps: []maps.Spec{hash8}, asm: forEach("*(u64 *)(r10 -8) = 0\nr4 = r2\nr1 = r10\nr1 += -8\nr2 = 4\nr3 = 0\ncall bpf_strtol#105"), err: "R4 cannot write into map_key", kmsg: true},
		{name: "pop into key", maps: []maps.Spec{hash8, queue8}, asm: forEach("r1 = map[fd:1] ll\ncall bpf_map_pop_elem#88"), err: "R2 cannot write into map_key", kmsg: true},
		{name: "snprintf into key", maps: []maps.Spec{hash8, rodata}, values: map[int][]byte{1: fmtValue}, asm: forEach("r1 = r2\nr2 = 8\nr3 = map_value[fd:1]+3 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165"), err: "R1 cannot write into map_key", kmsg: true},
		{name: "read past key", maps: []maps.Spec{hash8}, asm: forEach("r1 = r2\nr2 = 12\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28"), err: "invalid access to map key, key_size=8 off=0 size=12", kmsg: true},
		{name: "read key var offset", maps: []maps.Spec{hash8}, asm: forEach("r6 = r2\ncall bpf_get_prandom_u32#7\nr0 &= 4\nr6 += r0\nr1 = r6\nr2 = 4\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28")},
		{name: "read key var offset past end", maps: []maps.Spec{hash8}, asm: forEach("r6 = r2\ncall bpf_get_prandom_u32#7\nr0 &= 4\nr6 += r0\nr1 = r6\nr2 = 5\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28"), err: "R1 max value is outside of the allowed memory range", kmsg: true},
		{name: "key as update value", maps: []maps.Spec{hash8}, asm: forEach("r3 = r2\nr1 = map[fd:0] ll\nr4 = 0\ncall bpf_map_update_elem#2")},
		{name: "snprintf into key var size", maps: []maps.Spec{hash8, rodata}, values: map[int][]byte{1: fmtValue}, asm: forEach("r6 = r2\ncall bpf_get_prandom_u32#7\nr2 = r0\nr2 &= 7\nr1 = r6\nr3 = map_value[fd:1]+3 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165"), err: "R1 cannot write into map_key", kmsg: true},
		{name: "read key", maps: []maps.Spec{hash8}, asm: forEach("r1 = r2\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28")},
		{name: "lookup with key", maps: []maps.Spec{hash8}, asm: forEach("r1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1")},
		{name: "strtol into value", maps: []maps.Spec{hash8}, asm: forEach("*(u64 *)(r10 -8) = 0\nr4 = r3\nr1 = r10\nr1 += -8\nr2 = 4\nr3 = 0\ncall bpf_strtol#105")},
		{name: "strtol into rdonly value", maps: []maps.Spec{ro48}, asm: forEach("*(u64 *)(r10 -8) = 0\nr4 = r3\nr1 = r10\nr1 += -8\nr2 = 4\nr3 = 0\ncall bpf_strtol#105"), err: "write into map forbidden, value_size=48 off=0 size=8", kmsg: true},
		// Callback contexts are on the stack, or NULL.
		{name: "loop ctx stack", asm: "r1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit"},
		{name: "loop ctx stack var offset", asm: boundedR6 + "r3 = r10\nr3 += -16\nr3 += r6\nr1 = 4\nr2 = subprog[cb] ll\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit"},
		{name: "loop ctx null", asm: "r1 = 4\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit"},
		{name: "loop ctx scalar", asm: "r1 = 4\nr2 = subprog[cb] ll\nr3 = 7\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit", err: "R3 type=scalar expected=fp", kmsg: true},
		{name: "loop ctx map value", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r0\nr4 = 0\ncall bpf_loop#181\n" + outExit + "\ncb: r0 = 0\nexit", err: "R3 type=map_value expected=fp", kmsg: true},
		{name: "for_each ctx map value", maps: []maps.Spec{val48}, asm: lookup4 + "if r0 == 0 goto out\nr3 = r0\nr1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr4 = 0\ncall bpf_for_each_map_elem#164\n" + outExit + "\ncb: r0 = 0\nexit", err: "R3 type=map_value expected=fp", kmsg: true},
		{name: "for_each ctx packet", asm: xdpPkt + "r1 = map[fd:0] ll\nr3 = r2\nr2 = subprog[cb] ll\nr4 = 0\ncall bpf_for_each_map_elem#164\n" + outExit + "\ncb: r0 = 0\nexit", maps: []maps.Spec{hash8}, err: "helper access to the packet is not allowed", kmsg: true},
		// Read-only and write-only map values.
		{name: "load bytes into rdonly value", typ: tc, maps: []maps.Spec{ro48}, asm: "r6 = r1\n" + lookup4 + "if r0 == 0 goto out\nr1 = r6\nr2 = 0\nr3 = r0\nr4 = 8\ncall bpf_skb_load_bytes#26\n" + outExit, err: "write into map forbidden, value_size=48 off=0 size=8", kmsg: true},
		{name: "snprintf into rdonly value", maps: []maps.Spec{ro48, rodata}, values: map[int][]byte{1: fmtValue}, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nr2 = 8\nr3 = map_value[fd:1]+3 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\n" + outExit, err: "write into map forbidden, value_size=48 off=0 size=8", kmsg: true},
		{name: "pop into rdonly value", maps: []maps.Spec{queue8, ro48}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr2 = r0\nr2 += 8\nr1 = map[fd:0] ll\ncall bpf_map_pop_elem#88\n" + outExit, err: "write into map forbidden, value_size=48 off=8 size=8", kmsg: true},
		{name: "csum from rdonly value", maps: []maps.Spec{ro48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit},
		{name: "csum from wronly value", maps: []maps.Spec{wo48}, asm: lookup4 + "if r0 == 0 goto out\nr1 = r0\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit, err: "read from map forbidden, value_size=48 off=0 size=8", kmsg: true},
		{name: "update from wronly value", maps: []maps.Spec{wo48}, asm: lookup4 + "if r0 == 0 goto out\nr3 = r0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\nr4 = 0\ncall bpf_map_update_elem#2\n" + outExit, err: "read from map forbidden, value_size=48 off=0 size=48", kmsg: true},
		{name: "load bytes into wronly value", typ: tc, maps: []maps.Spec{wo48}, asm: "r6 = r1\n" + lookup4 + "if r0 == 0 goto out\nr1 = r6\nr2 = 0\nr3 = r0\nr4 = 8\ncall bpf_skb_load_bytes#26\n" + outExit},
		// The int an iterator yields is read-only memory.
		{name: "strtol into iter value", asm: iterNew + "r1 = r10\nr1 += -8\ncall bpf_iter_num_next#0\nif r0 == 0 goto d\n*(u64 *)(r10 -16) = 0\nr4 = r0\nr1 = r10\nr1 += -16\nr2 = 4\nr3 = 0\ncall bpf_strtol#105\nd: r1 = r10\nr1 += -8\ncall bpf_iter_num_destroy#0\nr0 = 0\nexit", err: "R4 type=rdonly_mem expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		// Packet and ring buffer memory.
		{name: "load bytes into packet", typ: tc, asm: "r6 = r1\n" + tcPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = r6\nr3 = r2\nr2 = 0\nr4 = 8\ncall bpf_skb_load_bytes#26\n" + outExit, err: "helper access to the packet is not allowed", kmsg: true},
		{name: "snprintf into packet", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: xdpPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = r2\n" + fmtR8 + "r2 = 8\nr3 = r8\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\n" + outExit, err: "helper access to the packet is not allowed", kmsg: true},
		{name: "csum from packet", asm: xdpPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = r2\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit},
		{name: "csum past packet", asm: xdpPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = r2\nr2 = 12\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit, err: "invalid access to packet, off=0 size=12, R1(id=0,off=0,r=8)", kmsg: true},
		{name: "csum zero size past packet", asm: xdpPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = r2\nr1 += 9\nr2 = 0\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + outExit, err: "invalid access to packet, off=9 size=0, R1(id=0,off=9,r=8)", kmsg: true},
		{name: "lookup key in packet", maps: []maps.Spec{arrayMap}, asm: xdpPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1\n" + outExit},
		{name: "strtol into ringbuf", maps: []maps.Spec{ringbuf}, asm: "r1 = map[fd:0] ll\nr2 = 8\nr3 = 0\ncall bpf_ringbuf_reserve#131\nif r0 == 0 goto out\nr6 = r0\n*(u64 *)(r10 -8) = 0\nr4 = r0\nr1 = r10\nr1 += -8\nr2 = 4\nr3 = 0\ncall bpf_strtol#105\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_submit#132\n" + outExit},
	})
}

func TestSelftestHelperMemIter(t *testing.T) {
	tc := ebpf.SchedCLS
	runCases(t, []vcase{
		// The shape of the issue: a helper write over the iterator.
		{name: "strtol over iter", asm: iterNew + "*(u64 *)(r10 -16) = 0\nr1 = r10\nr1 += -16\nr2 = 4\nr3 = 0\nr4 = r10\nr4 += -8\ncall bpf_strtol#105\n" + iterLoop, err: "expected an initialized iter_num as arg #0", kmsg: true},
		{name: "load bytes over iter", typ: tc, asm: "r9 = r1\n" + iterNew + "r1 = r9\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_skb_load_bytes#26\n" + iterLoop, err: "expected an initialized iter_num as arg #0", kmsg: true},
		{name: "load bytes over iter high half", typ: tc, asm: "r9 = r1\n" + iterNew + "r1 = r9\nr2 = 0\nr3 = r10\nr3 += -4\nr4 = 4\ncall bpf_skb_load_bytes#26\n" + iterLoop, err: "expected an initialized iter_num as arg #0", kmsg: true},
		{name: "load bytes over iter one byte", typ: tc, asm: "r9 = r1\n" + iterNew + "r1 = r9\nr2 = 0\nr3 = r10\nr3 += -5\nr4 = 1\ncall bpf_skb_load_bytes#26\n" + iterLoop, err: "expected an initialized iter_num as arg #0", kmsg: true},
		{name: "load bytes across iter", typ: tc, asm: "r9 = r1\n" + iterNew + "r1 = r9\nr2 = 0\nr3 = r10\nr3 += -16\nr4 = 12\ncall bpf_skb_load_bytes#26\n" + iterLoop, err: "expected an initialized iter_num as arg #0", kmsg: true},
		{name: "load bytes var offset over iter", typ: tc, asm: "r9 = r1\n" + iterNew + boundedR6 + "r1 = r9\nr2 = 0\nr3 = r10\nr3 += -16\nr3 += r6\nr4 = 8\ncall bpf_skb_load_bytes#26\n" + iterLoop, err: "invalid read from stack R3 var_off (0x0; 0x8)+8 size 8", kmsg: true},
		{name: "load bytes var size over iter", typ: tc, asm: "r9 = r1\n" + iterNew + "call bpf_get_prandom_u32#7\nr7 = r0\nr7 &= 7\nr7 += 1\nr1 = r9\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = r7\ncall bpf_skb_load_bytes#26\n" + iterLoop, err: "invalid read from stack R3 off -8+0 size 8", kmsg: true},
		{name: "load bytes next to iter", typ: tc, asm: "r9 = r1\n" + iterNew + "r1 = r9\nr2 = 0\nr3 = r10\nr3 += -16\nr4 = 8\ncall bpf_skb_load_bytes#26\n" + iterLoop},
		{name: "pop over iter", maps: []maps.Spec{queue8}, asm: iterNew + "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_pop_elem#88\n" + iterLoop, err: "expected an initialized iter_num as arg #0", kmsg: true},
		{name: "snprintf over iter", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: iterNew + fmtR8 + "r1 = r10\nr1 += -8\nr2 = 8\nr3 = r8\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\n" + iterLoop, err: "invalid read from stack R1 off -8+0 size 8", kmsg: true},
		// Direct accesses at a variable offset.
		{name: "var offset load over iter", asm: iterNew + boundedR6 + "r1 = r10\nr1 += -16\nr1 += r6\nr0 = *(u64 *)(r1 +0)\n" + iterLoop, err: "invalid read from stack R1 var_off (0x0; 0x8)+8 size 8", kmsg: true},
		{name: "var offset store over iter", asm: iterNew + boundedR6 + "r1 = r10\nr1 += -16\nr1 += r6\n*(u64 *)(r1 +0) = 0\n" + iterLoop, err: "expected an initialized iter_num as arg #0", kmsg: true},
		{name: "var offset load next to iter", asm: iterNew + boundedR6 + "*(u64 *)(r10 -24) = 0\n*(u64 *)(r10 -16) = 0\nr1 = r10\nr1 += -24\nr1 += r6\nr0 = *(u64 *)(r1 +0)\n" + iterLoop},
		// Helpers reading the iterator.
		{name: "csum reads iter", asm: iterNew + "r1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n" + iterLoop, err: "invalid read from stack R1 off -8+0 size 8", kmsg: true},
		{name: "lookup key reads iter", maps: []maps.Spec{hashMap}, asm: iterNew + "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\n" + iterLoop, err: "invalid read from stack R2 off -8+0 size 8", kmsg: true},
		{name: "lookup key reads iter high half", maps: []maps.Spec{arrayMap}, asm: iterNew + "r1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\n" + iterLoop, err: "invalid read from stack R2 off -4+0 size 4", kmsg: true},
		// Spilled pointers under helper writes become scalars.
		{name: "load bytes over spilled pointer part", typ: tc, asm: "*(u64 *)(r10 -8) = r1\nr2 = 0\nr3 = r10\nr3 += -4\nr4 = 4\ncall bpf_skb_load_bytes#26\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "strtol over spilled pointer", asm: "*(u64 *)(r10 -8) = r1\n*(u64 *)(r10 -16) = 0\nr1 = r10\nr1 += -16\nr2 = 4\nr3 = 0\nr4 = r10\nr4 += -8\ncall bpf_strtol#105\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "snprintf over spilled pointer", maps: []maps.Spec{rodata}, values: map[int][]byte{0: fmtValue}, asm: "r9 = r1\n" + fmtR8 + "*(u64 *)(r10 -8) = r9\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = r8\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
	})
}
