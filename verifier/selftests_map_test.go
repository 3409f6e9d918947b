package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// Maps of the selftests beyond those of verifier_test.go.
var (
	rdonlyOne = maps.Spec{Name: "ro1", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: 0x80}
	rdonlyArr = maps.Spec{Name: "ro", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4, Flags: 0x80}
	wronlyArr = maps.Spec{Name: "wo", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4, Flags: 0x100}
	oneArr    = maps.Spec{Name: "one", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1}
	ringbuf   = maps.Spec{Name: "rb", Type: maps.RingBuf, MaxEntries: 4096}
	queueMap  = maps.Spec{Name: "q", Type: maps.Queue, ValueSize: 8, MaxEntries: 4}
	progArray = maps.Spec{Name: "progs", Type: maps.ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}
	perCPUArr = maps.Spec{Name: "pcpu", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	lruHash   = maps.Spec{Name: "lru", Type: maps.LRUHash, KeySize: 8, ValueSize: 16, MaxEntries: 16}
)

// Maps of maps whose inner maps are arrays like arrayMap, with and without
// BPF_F_INNER_MAP on the template. lookupInner leaves the inner map of slot
// 0 in r6 (or goes to out when the slot is empty); innerLookup4 looks key 0
// up in it.
var (
	innerFlagArr     = maps.Spec{Name: "inner", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4, Flags: maps.FlagInnerMap}
	outerFlagged     = maps.Spec{Name: "outer", Type: maps.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: &innerFlagArr}
	outerFixed       = maps.Spec{Name: "outer", Type: maps.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: &arrayMap}
	hashOuterFlagged = maps.Spec{Name: "houter", Type: maps.HashOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: &innerFlagArr}
	lookupInner      = "*(u32 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr6 = r0\n"
	innerLookup4     = "*(u32 *)(r10 -4) = 0\nr1 = r6\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\n"
)

// TestSelftestMapValues covers map lookups: null checks in every form,
// copies sharing a check, value bounds, read-only and write-only maps.
func TestSelftestMapValues(t *testing.T) {
	h := []maps.Spec{hashMap}
	out := "\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		// Null checks.
		{name: "jne form", maps: h, asm: lookup8 + "if r0 != 0 goto ok\nr0 = 0\nexit\nok: r0 = *(u64 *)(r0 +0)\nexit"},
		{name: "jeq taken deref", maps: h, asm: lookup8 + "if r0 == 0 goto null\nr0 = 0\nexit\nnull: r0 = *(u64 *)(r0 +0)\nexit", err: "R0 invalid mem access 'scalar'", kmsg: true},
		{name: "jne fall-through deref", maps: h, asm: lookup8 + "if r0 != 0 goto out\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'scalar'", kmsg: true},
		{name: "copy before check", maps: h, asm: lookup8 + "r6 = r0\nif r0 == 0 goto out\nr0 = *(u64 *)(r6 +8)" + out},
		{name: "copy of copy", maps: h, asm: lookup8 + "r6 = r0\nr7 = r6\nif r6 == 0 goto out\nr0 = *(u64 *)(r7 +8)" + out},
		{name: "copy after check", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr6 = r0\nr0 = *(u64 *)(r6 +8)" + out},
		{name: "check other lookup", maps: h, asm: lookup8 + "r6 = r0\n" + lookup8 + "if r0 == 0 goto out\nr0 = *(u64 *)(r6 +0)" + out, err: "R6 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "no check", maps: h, asm: lookup8 + "r0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "write without check", maps: h, asm: lookup8 + "*(u64 *)(r0 +0) = 1" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "compare with one", maps: h, asm: lookup8 + "if r0 == 1 goto out\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "compare with zero register", maps: h, asm: lookup8 + "r1 = 0\nif r0 == r1 goto out\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "32-bit compare", maps: h, asm: lookup8 + "if w0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "null pointer is scalar zero", maps: h, asm: lookup8 + "if r0 != 0 goto out\nr0 += 1\nexit" + out},
		{name: "checked twice", maps: h, asm: lookup8 + "if r0 == 0 goto out\nif r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "non-null compare is decided", maps: h, asm: lookup8 + "if r0 == 0 goto out\nif r0 != 0 goto ok\nr0 = *(u64 *)(r10 +8)\nexit\nok: r0 = 0" + out},
		// Value bounds.
		{name: "value last bytes", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +8)" + out},
		{name: "value past end", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr0 = *(u32 *)(r0 +14)" + out, err: "invalid access to map value, value_size=16 off=14 size=4", kmsg: true},
		{name: "value negative", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr0 = *(u8 *)(r0 -1)" + out, err: "invalid access to map value, value_size=16 off=-1 size=1", kmsg: true},
		{name: "value write", maps: h, asm: lookup8 + "if r0 == 0 goto out\n*(u64 *)(r0 +8) = 7\nr1 = 3\n*(u32 *)(r0 +4) = r1" + out},
		{name: "value atomic", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 +8) += r1" + out},
		{name: "value atomic misaligned", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 +4) += r1" + out, err: "misaligned value access off 0+0+4 size 8", kmsg: true},
		{name: "value var bounded", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr1 = *(u8 *)(r0 +0)\nr1 &= 8\nr0 += r1\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "value var too big", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr1 = *(u8 *)(r0 +0)\nr1 &= 9\nr0 += r1\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 max value is outside of the allowed memory range", kmsg: true},
		{name: "value var checked signed", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nif r1 s> 8 goto out\nr0 += r1\nr0 = *(u64 *)(r0 +0)" + out, err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "value pointer compared", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr1 = r0\nr1 += 8\nif r1 > r0 goto out\nr0 = 0" + out},
		{name: "percpu array", maps: []maps.Spec{perCPUArr}, asm: lookup4 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "lru hash", maps: []maps.Spec{lruHash}, asm: lookup8 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +8)" + out},
		// Read-only and write-only maps.
		{name: "rdonly read", maps: []maps.Spec{rdonlyArr}, asm: lookup4 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "rdonly write", maps: []maps.Spec{rdonlyArr}, asm: lookup4 + "if r0 == 0 goto out\n*(u64 *)(r0 +0) = 1" + out, err: "write into map forbidden, value_size=8 off=0 size=8", kmsg: true},
		{name: "rdonly atomic", maps: []maps.Spec{rdonlyArr}, asm: lookup4 + "if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 +0) += r1" + out, err: "write into map forbidden"},
		{name: "rdonly helper write", typ: ebpf.SchedCLS, maps: []maps.Spec{rdonlyArr}, asm: "r6 = r1\n" + lookup4 + "if r0 == 0 goto out\nr1 = r6\nr2 = 0\nr3 = r0\nr4 = 8\ncall bpf_skb_load_bytes#26" + out, err: "write into map forbidden"},
		{name: "rdonly helper read", typ: ebpf.SchedCLS, maps: []maps.Spec{rdonlyArr}, asm: "r6 = r1\n" + lookup4 + "if r0 == 0 goto out\nr1 = r0\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28" + out},
		{name: "wronly read", maps: []maps.Spec{wronlyArr}, asm: lookup4 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out, err: "read from map forbidden, value_size=8 off=0 size=8", kmsg: true},
		{name: "wronly write", maps: []maps.Spec{wronlyArr}, asm: lookup4 + "if r0 == 0 goto out\n*(u64 *)(r0 +0) = 1" + out},
		// Array lookups with a constant in-range key find an element: the
		// pointer is not NULL.
		{name: "array const key unchecked", maps: []maps.Spec{arrayMap}, asm: lookup4 + "r0 = *(u64 *)(r0 +0)" + out},
		{name: "array const key unchecked unpriv", unpriv: true, maps: []maps.Spec{arrayMap}, asm: lookup4 + "r0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'"},
		{name: "array const key checked unpriv", unpriv: true, maps: []maps.Spec{arrayMap}, asm: lookup4 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "array const key out of range", maps: []maps.Spec{arrayMap}, asm: "*(u32 *)(r10 -4) = 4\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access"},
		// The branch of the elided check is never explored: whatever it
		// does is accepted, and the rewrite makes it unreachable.
		{name: "dead branch writes a read-only map", maps: []maps.Spec{arrayMap, rdonlyOne}, asm: lookup4 + "if r0 == 0 goto dead\nr0 = *(u64 *)(r0 +0)\nexit\ndead: r1 = map_value[fd:1]+0 ll\n*(u64 *)(r1 +0) = 1" + out},
		{name: "explored branch writes a read-only map", maps: []maps.Spec{hashMap, rdonlyOne}, asm: lookup8 + "if r0 == 0 goto dead\nr0 = *(u64 *)(r0 +0)\nexit\ndead: r1 = map_value[fd:1]+0 ll\n*(u64 *)(r1 +0) = 1" + out, err: "write into map forbidden, value_size=8 off=0 size=8", kmsg: true},
		// Not with BPF_F_INNER_MAP: the array is the template of inner
		// maps that may be smaller (the kernel's fix of
		// can_elide_value_nullness, which 6.18 has).
		{name: "inner-map array const key unchecked", maps: []maps.Spec{innerFlagArr}, asm: lookup4 + "r0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "inner-map array const key checked", maps: []maps.Spec{innerFlagArr}, asm: lookup4 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "inner array const key unchecked, template BPF_F_INNER_MAP", maps: []maps.Spec{outerFlagged}, asm: lookupInner + innerLookup4 + "r0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "inner array const key checked, template BPF_F_INNER_MAP", maps: []maps.Spec{outerFlagged}, asm: lookupInner + innerLookup4 + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "inner array const key out of template range", maps: []maps.Spec{outerFlagged}, asm: lookupInner + "*(u32 *)(r10 -4) = 4\nr1 = r6\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		// The shape of issue #11: the branch of the check is explored now,
		// and its write into a read-only map refused.
		{name: "inner array const key, branch writes a read-only map", maps: []maps.Spec{outerFlagged, rdonlyOne}, asm: lookupInner + innerLookup4 + "if r0 == 0 goto dead\nr0 = *(u64 *)(r0 +0)\nexit\ndead: r1 = map_value[fd:1]+0 ll\n*(u64 *)(r1 +0) = 1" + out, err: "write into map forbidden, value_size=8 off=0 size=8", kmsg: true},
		// Without the flag every inner map has the template's size.
		{name: "inner array const key unchecked, fixed template", maps: []maps.Spec{outerFixed}, asm: lookupInner + innerLookup4 + "r0 = *(u64 *)(r0 +0)" + out},
		{name: "hash of maps: inner array const key unchecked, template BPF_F_INNER_MAP", maps: []maps.Spec{hashOuterFlagged}, asm: lookupInner + innerLookup4 + "r0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "array var key", maps: []maps.Spec{arrayMap}, asm: "r6 = *(u32 *)(r1 +12)\n*(u32 *)(r10 -4) = r6\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		// Direct value access.
		{name: "direct value", maps: []maps.Spec{oneArr}, asm: "r1 = map_value[fd:0]+8 ll\nr0 = *(u64 *)(r1 +0)\nexit"},
		{name: "direct value past end", maps: []maps.Spec{oneArr}, asm: "r1 = map_value[fd:0]+8 ll\nr0 = *(u64 *)(r1 +1)\nexit", err: "invalid access to map value, value_size=16 off=9 size=8", kmsg: true},
		{name: "direct value offset too big", maps: []maps.Spec{oneArr}, asm: "r1 = map_value[fd:0]+16 ll\nr0 = 0\nexit", err: "invalid access to map value pointer, value_size=16 off=16", kmsg: true},
		{name: "direct value of hash", maps: h, asm: "r1 = map_value[fd:0]+0 ll\nr0 = 0\nexit", err: "no direct value access support for this map type", kmsg: true},
		{name: "direct value of big array", maps: []maps.Spec{arrayMap}, asm: "r1 = map_value[fd:0]+0 ll\nr0 = 0\nexit", err: "invalid access to map value pointer, value_size=8 off=0", kmsg: true},
		{name: "bad map index", maps: h, asm: "r1 = map[fd:1] ll\nr0 = 0\nexit", err: "fd 1 is not pointing to valid bpf_map", noKernel: true},
	})
}

// TestSelftestMapHelpers covers the map arguments of helpers: key and value
// sizes and kinds of memory, and map types a helper does not take.
func TestSelftestMapHelpers(t *testing.T) {
	h := []maps.Spec{hashMap}
	out := "\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		{name: "key too short", maps: h, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1" + out, err: "invalid read from stack R2 off=-4 size=8", kmsg: true},
		{name: "key uninit priv", maps: h, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1" + out},
		{name: "key in map value", maps: []maps.Spec{hashMap, val48}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr1 = map[fd:0] ll\nr2 = r0\nr2 += 40\ncall bpf_map_lookup_elem#1" + out},
		{name: "key past map value", maps: []maps.Spec{hashMap, val48}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr1 = map[fd:0] ll\nr2 = r0\nr2 += 41\ncall bpf_map_lookup_elem#1" + out, err: "invalid access to map value, value_size=48 off=41 size=8", kmsg: true},
		{name: "key in packet", maps: h, asm: xdpPkt + "r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1" + out},
		{name: "key in short packet", maps: h, asm: xdpPkt + "r4 = r2\nr4 += 4\nif r4 > r3 goto out\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1" + out, err: "invalid access to packet, off=0 size=8, R2(id=0,off=0,r=4)", kmsg: true},
		{name: "key is ctx", maps: h, asm: "r2 = r1\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1" + out, err: "R2 type=ctx expected=fp, pkt, pkt_meta, map_key, map_value", kmsg: true},
		{name: "key is null", maps: h, asm: "r1 = map[fd:0] ll\nr2 = 0\ncall bpf_map_lookup_elem#1" + out, err: "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value", kmsg: true},
		{name: "map is not a map", maps: h, asm: "r1 = r10\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1" + out, err: "R1 type=fp expected=map_ptr", kmsg: true},
		{name: "map is ctx", maps: h, asm: "r2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1" + out, err: "R1 type=ctx expected=map_ptr", kmsg: true},
		{name: "map uninit", maps: h, asm: "r1 = 0\nr2 = r10\nr2 += -8\ncall fn\nr0 = 0\nexit\nfn: r2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nr0 = 0\nexit", err: "R1 type=scalar expected=map_ptr", kmsg: true},
		{name: "update", maps: h, asm: "*(u64 *)(r10 -8) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -24) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = r10\nr3 += -24\nr4 = 0\ncall bpf_map_update_elem#2" + out},
		{name: "update value too short", maps: h, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_map_update_elem#2" + out, err: "invalid read from stack R3 off=-8 size=16", kmsg: true},
		{name: "update flags uninit", maps: h, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = r10\nr3 += -24\ncall bpf_map_update_elem#2" + out, err: "R4 !read_ok", kmsg: true},
		{name: "update value from map", maps: h, asm: lookup8 + "if r0 == 0 goto out\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = r0\nr4 = 0\ncall bpf_map_update_elem#2" + out},
		{name: "update value from map or null", maps: h, asm: lookup8 + "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = r0\nr4 = 0\ncall bpf_map_update_elem#2" + out, err: "R3 type=map_value_or_null expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "delete", maps: h, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_delete_elem#3" + out},
		{name: "lookup in ringbuf", maps: []maps.Spec{ringbuf}, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1" + out, err: "invalid zero-sized read", kmsg: true},
		{name: "lookup in queue", maps: []maps.Spec{queueMap}, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1" + out, err: "invalid zero-sized read", kmsg: true},
		{name: "push to hash", maps: h, asm: "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -16\nr3 = 0\ncall bpf_map_push_elem#87" + out, err: "cannot pass map_type 1 into func bpf_map_push_elem#87", kmsg: true},
		{name: "push to queue", maps: []maps.Spec{queueMap}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 0\ncall bpf_map_push_elem#87" + out},
		{name: "pop from queue", maps: []maps.Spec{queueMap}, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_pop_elem#88\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "delete from array", maps: []maps.Spec{arrayMap}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_delete_elem#3" + out},
		{name: "ringbuf output to array", maps: []maps.Spec{arrayMap}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 8\nr4 = 0\ncall bpf_ringbuf_output#130" + out, err: "cannot pass map_type 2 into func bpf_ringbuf_output#130", kmsg: true},
		{name: "tail call with hash", maps: h, asm: "r2 = map[fd:0] ll\nr3 = 0\ncall bpf_tail_call#12" + out, err: "cannot pass map_type 1 into func bpf_tail_call#12", klog: "expected prog array map for tail call"},
		{name: "tail call", maps: []maps.Spec{progArray}, asm: "r2 = map[fd:0] ll\nr3 = 0\ncall bpf_tail_call#12" + out},
		{name: "tail call ctx modified", maps: []maps.Spec{progArray}, asm: "r1 += 4\nr2 = map[fd:0] ll\nr3 = 0\ncall bpf_tail_call#12" + out, err: "dereference of modified ctx ptr R1 off=4 disallowed", kmsg: true},
		{name: "tail call clobbers", maps: []maps.Spec{progArray}, asm: "r6 = 1\nr2 = map[fd:0] ll\nr3 = 0\ncall bpf_tail_call#12\nr0 = r1\nexit", err: "R1 !read_ok", kmsg: true},
		{name: "two maps one call site", maps: []maps.Spec{hashMap, lruHash}, asm: "r6 = *(u32 *)(r1 +12)\n*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nif r6 == 0 goto l\nr1 = map[fd:1] ll\nl: r2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr0 = *(u64 *)(r0 +8)" + out},
	})
}
