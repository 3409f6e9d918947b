package verifier_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestMapHelperCompatibility passes every map type bpfvm implements to
// every helper that takes a map, with arguments valid for it, and compares
// the verdict with the kernel's check_map_func_compatibility (and the
// checks before it: a keyless map's key, the walk of bpf_for_each_map_elem).
// The expected verdicts are written out here, from the kernel's function,
// not taken from the map type descriptions under test.
func TestMapHelperCompatibility(t *testing.T) {
	inner := maps.Spec{Name: "inner", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 8}
	specs := []maps.Spec{
		{Name: "hash", Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "array", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "progs", Type: maps.ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 8},
		{Name: "perf", Type: maps.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 8},
		{Name: "pchash", Type: maps.PerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "pcarray", Type: maps.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "lru", Type: maps.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "pclru", Type: maps.LRUPerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "lpm", Type: maps.LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 8, Flags: maps.FlagNoPrealloc},
		{Name: "aom", Type: maps.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 8, InnerMap: &inner},
		{Name: "hom", Type: maps.HashOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 8, InnerMap: &inner},
		{Name: "dev", Type: maps.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "cpu", Type: maps.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 8},
		{Name: "xsk", Type: maps.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 8},
		{Name: "queue", Type: maps.Queue, ValueSize: 8, MaxEntries: 8},
		{Name: "stack", Type: maps.Stack, ValueSize: 8, MaxEntries: 8},
		{Name: "devhash", Type: maps.DevMapHash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "ringbuf", Type: maps.RingBuf, MaxEntries: 4096},
		{Name: "bloom", Type: maps.BloomFilter, ValueSize: 8, MaxEntries: 8},
	}
	keyed := []maps.Type{maps.Hash, maps.Array, maps.PerCPUHash, maps.PerCPUArray, maps.LRUHash, maps.LRUPerCPUHash, maps.LPMTrie}
	walked := []maps.Type{maps.Hash, maps.Array, maps.PerCPUHash, maps.PerCPUArray, maps.LRUHash, maps.LRUPerCPUHash}
	queues := []maps.Type{maps.Queue, maps.Stack}
	// The stack at fp-32..fp-1 is zero: keys, values and output data.
	const zero = "r6 = r1\n*(u64 *)(r10 -8) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -24) = 0\n*(u64 *)(r10 -32) = 0\n"
	const key, val = "r2 = r10\nr2 += -16\n", "r3 = r10\nr3 += -32\n"
	const m = "r1 = map[fd:0] ll\n"
	for _, h := range []struct {
		name  string
		id    int
		asm   string
		takes []maps.Type
		// keyed: the helper reads a key (value) of the map's size,
		// which a keyless (valueless) map refuses first.
		key, value bool
		// writes: the helper changes the map.
		writes bool
	}{
		{name: "bpf_map_lookup_elem", id: 1, asm: m + key, key: true,
			takes: append(slices.Clone(keyed), maps.ArrayOfMaps, maps.HashOfMaps, maps.DevMap, maps.DevMapHash, maps.XSKMap)},
		{name: "bpf_map_update_elem", id: 2, asm: m + key + val + "r4 = 0\n", key: true, value: true, writes: true, takes: keyed},
		{name: "bpf_map_delete_elem", id: 3, asm: m + key, key: true, writes: true, takes: keyed},
		{name: "bpf_map_push_elem", id: 87, asm: m + "r2 = r10\nr2 += -16\nr3 = 0\n", value: true, writes: true, takes: append(slices.Clone(queues), maps.BloomFilter)},
		{name: "bpf_map_pop_elem", id: 88, asm: m + key, value: true, writes: true, takes: queues},
		{name: "bpf_map_peek_elem", id: 89, asm: m + key, value: true, takes: append(slices.Clone(queues), maps.BloomFilter)},
		{name: "bpf_tail_call", id: 12, asm: "r1 = r6\nr2 = map[fd:0] ll\nr3 = 0\n", takes: []maps.Type{maps.ProgArray}},
		{name: "bpf_perf_event_output", id: 25, asm: "r1 = r6\nr2 = map[fd:0] ll\nr3 = 0\nr4 = r10\nr4 += -8\nr5 = 8\n", takes: []maps.Type{maps.PerfEventArray}},
		{name: "bpf_redirect_map", id: 51, asm: m + "r2 = 0\nr3 = 0\n", takes: []maps.Type{maps.DevMap, maps.CPUMap, maps.XSKMap, maps.DevMapHash}},
		{name: "bpf_ringbuf_output", id: 130, asm: m + "r2 = r10\nr2 += -8\nr3 = 8\nr4 = 0\n", takes: []maps.Type{maps.RingBuf}},
		{name: "bpf_ringbuf_query", id: 134, asm: m + "r2 = 0\n", takes: []maps.Type{maps.RingBuf}},
		{name: "bpf_for_each_map_elem", id: 164, asm: m + "r2 = subprog[cb] ll\nr3 = 0\nr4 = 0\n", takes: walked},
	} {
		var cases []vcase
		for _, s := range specs {
			c := vcase{name: h.name + " " + s.Type.String(), typ: ebpf.XDP, maps: []maps.Spec{s}, kmsg: true,
				asm: zero + h.asm + fmt.Sprintf("call %s#%d\nr0 = 0\nexit", h.name, h.id)}
			if h.id == 164 {
				c.asm += "\ncb: r0 = 0\nexit"
			}
			switch {
			case h.key && s.KeySize == 0 || h.value && s.ValueSize == 0:
				c.err = "invalid zero-sized read"
			case h.writes && (s.Type == maps.DevMap || s.Type == maps.DevMapHash):
				// The kernel makes devmaps read-only to programs
				// (record_func_map, before the map type).
				c.err = "write into map forbidden"
			case h.id == 164 && !slices.Contains(h.takes, s.Type):
				c.err = "callback function not allowed for map"
			case !slices.Contains(h.takes, s.Type):
				c.err = fmt.Sprintf("cannot pass map_type %d into func %s#%d", s.Type, h.name, h.id)
				if h.id == 12 {
					// The kernel's words differ (its
					// ARG_CONST_MAP_PTR check for tail calls).
					c.kmsg, c.klog = false, "expected prog array map for tail call"
				}
			}
			cases = append(cases, c)
		}
		runCases(t, cases)
	}
}
