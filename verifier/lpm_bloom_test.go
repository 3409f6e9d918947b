package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// LPM tries and bloom filters: which helpers take them, and the key and
// value rules of their arguments, compared with the kernel.
func TestLPMBloomHelpers(t *testing.T) {
	lpm4 := maps.Spec{Name: "lpm4", Type: maps.LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 16, Flags: maps.FlagNoPrealloc}
	lpm6 := maps.Spec{Name: "lpm6", Type: maps.LPMTrie, KeySize: 20, ValueSize: 4, MaxEntries: 16, Flags: maps.FlagNoPrealloc}
	bloom := maps.Spec{Name: "bloom", Type: maps.BloomFilter, ValueSize: 8, MaxEntries: 16, MapExtra: 3}
	// key8 is an 8-byte key at fp-8; key20 a 20-byte one at fp-24.
	key8 := "*(u64 *)(r10 -8) = 0\nr2 = r10\nr2 += -8\n"
	key20 := "*(u64 *)(r10 -24) = 0\n*(u64 *)(r10 -16) = 0\n*(u32 *)(r10 -8) = 0\nr2 = r10\nr2 += -24\n"
	val8 := "*(u64 *)(r10 -16) = 0\nr3 = r10\nr3 += -16\n"
	lookup := "r1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1\n"
	runCases(t, []vcase{
		{name: "lpm lookup", maps: []maps.Spec{lpm4}, asm: key8 + lookup + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)\n" + outExit},
		{name: "lpm lookup value is maybe null", maps: []maps.Spec{lpm4}, asm: key8 + lookup + "r0 = *(u64 *)(r0 +0)\nexit", err: "invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "lpm lookup value write", maps: []maps.Spec{lpm4}, asm: key8 + lookup + "if r0 == 0 goto out\n*(u64 *)(r0 +0) = 1\n" + outExit},
		{name: "lpm lookup past the value", maps: []maps.Spec{lpm4}, asm: key8 + lookup + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +4)\n" + outExit, err: "invalid access to map value, value_size=8 off=4 size=8", kmsg: true},
		{name: "lpm6 lookup", maps: []maps.Spec{lpm6}, asm: key20 + lookup + "if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\n" + outExit},
		{name: "lpm6 key short", maps: []maps.Spec{lpm6}, asm: key8 + lookup + outExit, err: "invalid read from stack", klog: "invalid read from stack"},
		{name: "lpm update", maps: []maps.Spec{lpm4}, asm: key8 + val8 + "r1 = map[fd:0] ll\nr4 = 1\ncall bpf_map_update_elem#2\n" + outExit},
		{name: "lpm delete", maps: []maps.Spec{lpm4}, asm: key8 + "r1 = map[fd:0] ll\ncall bpf_map_delete_elem#3\n" + outExit},
		{name: "lpm push", maps: []maps.Spec{lpm4}, asm: "*(u64 *)(r10 -8) = 0\nr2 = r10\nr2 += -8\nr1 = map[fd:0] ll\nr3 = 0\ncall bpf_map_push_elem#87\n" + outExit, err: "cannot pass map_type 11 into func bpf_map_push_elem#87", kmsg: true},
		{name: "lpm for_each", maps: []maps.Spec{lpm4}, asm: "r1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_for_each_map_elem#164\nr0 = 0\nexit\ncb: r0 = 0\nexit", err: "callback function not allowed for map", kmsg: true},
		{name: "lpm read-only to programs, write", maps: []maps.Spec{{Name: "ro", Type: maps.LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 4, Flags: maps.FlagNoPrealloc | maps.FlagRdonlyProg}}, asm: key8 + lookup + "if r0 == 0 goto out\n*(u64 *)(r0 +0) = 1\n" + outExit, err: "write into map forbidden", kmsg: true},
		{name: "bloom push", maps: []maps.Spec{bloom}, asm: "*(u64 *)(r10 -8) = 0\nr2 = r10\nr2 += -8\nr1 = map[fd:0] ll\nr3 = 0\ncall bpf_map_push_elem#87\n" + outExit},
		{name: "bloom peek", maps: []maps.Spec{bloom}, asm: "*(u64 *)(r10 -8) = 0\nr2 = r10\nr2 += -8\nr1 = map[fd:0] ll\ncall bpf_map_peek_elem#89\n" + outExit},
		{name: "bloom peek of uninitialised stack", maps: []maps.Spec{bloom}, asm: "r2 = r10\nr2 += -8\nr1 = map[fd:0] ll\ncall bpf_map_peek_elem#89\n" + outExit},
		{name: "bloom push of uninitialised stack", maps: []maps.Spec{bloom}, asm: "r2 = r10\nr2 += -8\nr1 = map[fd:0] ll\nr3 = 0\ncall bpf_map_push_elem#87\n" + outExit}, // privileged: uninitialised stack reads are allowed
		{name: "bloom push of uninitialised stack, unprivileged", unpriv: true, maps: []maps.Spec{bloom}, asm: "r2 = r10\nr2 += -8\nr1 = map[fd:0] ll\nr3 = 0\ncall bpf_map_push_elem#87\n" + outExit, err: "invalid read from stack", klog: "invalid read from stack"},
		{name: "bloom push value short", maps: []maps.Spec{bloom}, asm: "*(u32 *)(r10 -4) = 0\nr2 = r10\nr2 += -4\nr1 = map[fd:0] ll\nr3 = 0\ncall bpf_map_push_elem#87\n" + outExit, err: "invalid read from stack", klog: "invalid read from stack"},
		{name: "bloom pop", maps: []maps.Spec{bloom}, asm: "r2 = r10\nr2 += -8\nr1 = map[fd:0] ll\ncall bpf_map_pop_elem#88\n" + outExit, err: "cannot pass map_type 30 into func bpf_map_pop_elem#88", kmsg: true},
		{name: "bloom lookup", maps: []maps.Spec{bloom}, asm: key8 + lookup + outExit, err: "invalid zero-sized read", kmsg: true},
		{name: "bloom update", maps: []maps.Spec{bloom}, asm: key8 + val8 + "r1 = map[fd:0] ll\nr4 = 0\ncall bpf_map_update_elem#2\n" + outExit, err: "invalid zero-sized read", kmsg: true},
		{name: "bloom delete", maps: []maps.Spec{bloom}, asm: key8 + "r1 = map[fd:0] ll\ncall bpf_map_delete_elem#3\n" + outExit, err: "invalid zero-sized read", kmsg: true},
		{name: "bloom for_each", maps: []maps.Spec{bloom}, asm: "r1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_for_each_map_elem#164\nr0 = 0\nexit\ncb: r0 = 0\nexit", err: "callback function not allowed for map", kmsg: true},
		{name: "bloom in xdp", typ: ebpf.XDP, maps: []maps.Spec{bloom}, asm: "*(u64 *)(r10 -8) = 0\nr2 = r10\nr2 += -8\nr1 = map[fd:0] ll\ncall bpf_map_peek_elem#89\n" + outExit},
	})
}
