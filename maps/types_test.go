package maps

import (
	"slices"
	"testing"
)

// TestTypeDescriptions checks what every implemented type must describe.
func TestTypeDescriptions(t *testing.T) {
	var n int
	for typ := range maxType {
		info, ok := typ.info()
		if !ok {
			continue
		}
		n++
		if info.maps == nil || info.kernelStruct == "" || typ.String() == "" {
			t.Errorf("%s: incomplete description %+v", typ, info)
		}
		if info.onlyHelpers && len(info.helpers) == 0 {
			t.Errorf("%s: takes only helpers it names, and names none", typ)
		}
	}
	if n != 28 {
		t.Errorf("%d implemented types, want 28", n)
	}
	if got := Type(100).String(); got != "type 100" {
		t.Errorf("Type(100).String() = %q", got)
	}
}

// TestTakesHelper checks map types against the helpers that take them, as
// the kernel's check_map_func_compatibility (both halves).
func TestTakesHelper(t *testing.T) {
	open := []Type{Hash, Array, PerCPUHash, PerCPUArray, LRUHash, LRUPerCPUHash, LPMTrie}
	all := append(slices.Clone(open), ProgArray, PerfEventArray, ArrayOfMaps, HashOfMaps, DevMap, CPUMap, XSKMap, DevMapHash, Queue, Stack, RingBuf, BloomFilter,
		CgroupArray, CgroupStorage, PerCPUCgroupStorage, SockMap, SockHash, ReuseportSockArray, SkStorage)
	socks := []Type{SockMap, SockHash}
	for _, tt := range []struct {
		helper string
		takes  []Type
	}{
		{"bpf_map_lookup_elem", append(slices.Clone(open), ArrayOfMaps, HashOfMaps, DevMap, DevMapHash, XSKMap, SockMap, SockHash)},
		{"bpf_map_update_elem", append(slices.Clone(open), socks...)},
		{"bpf_map_delete_elem", append(slices.Clone(open), socks...)},
		{"bpf_get_local_storage", []Type{CgroupStorage, PerCPUCgroupStorage}},
		{"bpf_skb_under_cgroup", []Type{CgroupArray}},
		{"bpf_current_task_under_cgroup", []Type{CgroupArray}},
		{"bpf_sk_storage_get", []Type{SkStorage}},
		{"bpf_sk_storage_delete", []Type{SkStorage}},
		{"bpf_sk_redirect_map", []Type{SockMap}},
		{"bpf_msg_redirect_map", []Type{SockMap}},
		{"bpf_sock_map_update", []Type{SockMap}},
		{"bpf_sk_redirect_hash", []Type{SockHash}},
		{"bpf_msg_redirect_hash", []Type{SockHash}},
		{"bpf_sock_hash_update", []Type{SockHash}},
		{"bpf_sk_select_reuseport", []Type{SockMap, SockHash, ReuseportSockArray}},
		{"bpf_for_each_map_elem", []Type{Hash, Array, PerCPUHash, PerCPUArray, LRUHash, LRUPerCPUHash}},
		{"bpf_map_lookup_percpu_elem", []Type{PerCPUHash, PerCPUArray, LRUPerCPUHash}},
		{"bpf_map_push_elem", []Type{Queue, Stack, BloomFilter}},
		{"bpf_map_peek_elem", []Type{Queue, Stack, BloomFilter}},
		{"bpf_map_pop_elem", []Type{Queue, Stack}},
		{"bpf_tail_call", []Type{ProgArray}},
		{"bpf_perf_event_output", []Type{PerfEventArray}},
		{"bpf_ringbuf_output", []Type{RingBuf}},
		{"bpf_ringbuf_reserve", []Type{RingBuf}},
		{"bpf_ringbuf_query", []Type{RingBuf}},
		{"bpf_redirect_map", []Type{DevMap, CPUMap, XSKMap, DevMapHash}},
		// A helper no type names (a host helper) takes the types the
		// kernel gives any helper.
		{"host_helper", open},
	} {
		for _, typ := range all {
			if got, want := typ.TakesHelper(tt.helper), slices.Contains(tt.takes, typ); got != want {
				t.Errorf("%s takes %s: %v, want %v", typ, tt.helper, got, want)
			}
		}
	}
}

// TestTypeRules checks the per-type rules the verifier and the API ask.
func TestTypeRules(t *testing.T) {
	for _, tt := range []struct {
		rule  string
		of    func(Type) bool
		types []Type
	}{
		{"PerCPU", Type.PerCPU, []Type{PerCPUHash, PerCPUArray, LRUPerCPUHash, PerCPUCgroupStorage}},
		{"RefSockets", Type.RefSockets, []Type{SockMap, SockHash, ReuseportSockArray}},
		{"NoEntries", Type.NoEntries, []Type{CgroupStorage, PerCPUCgroupStorage, SkStorage}},
		{"no Batch", func(t Type) bool { return !t.Batch() && t.Implemented() }, []Type{CgroupArray, CgroupStorage, PerCPUCgroupStorage, SockMap, SockHash, ReuseportSockArray, SkStorage, Arena}},
		{"OfMaps", Type.OfMaps, []Type{ArrayOfMaps, HashOfMaps}},
		{"Indexed", Type.Indexed, []Type{Array, PerCPUArray}},
		{"DirectValue", Type.DirectValue, []Type{Array}},
		{"ProgReadOnly", Type.ProgReadOnly, []Type{DevMap, DevMapHash}},
		{"SocketValues", Type.SocketValues, []Type{XSKMap}},
		{"ValueIsKey", Type.ValueIsKey, []Type{BloomFilter}},
		{"Implemented", Type.Implemented, []Type{Hash, Array, ProgArray, PerfEventArray, PerCPUHash, PerCPUArray, LRUHash, LRUPerCPUHash,
			LPMTrie, ArrayOfMaps, HashOfMaps, DevMap, CPUMap, XSKMap, Queue, Stack, DevMapHash, RingBuf, BloomFilter,
			CgroupArray, CgroupStorage, PerCPUCgroupStorage, SockMap, SockHash, ReuseportSockArray, SkStorage, StackTrace, Arena}},
		{"no BatchLookupAndDelete", func(t Type) bool { return !t.BatchLookupAndDelete() }, []Type{LPMTrie}},
	} {
		for typ := range maxType {
			if got, want := tt.of(typ), slices.Contains(tt.types, typ); got != want {
				t.Errorf("%s %s: %v, want %v", tt.rule, typ, got, want)
			}
		}
	}
	for typ, want := range map[Type]string{Hash: "bpf_htab", HashOfMaps: "bpf_htab", ArrayOfMaps: "bpf_array", PerfEventArray: "bpf_array",
		LPMTrie: "lpm_trie", RingBuf: "bpf_ringbuf_map", DevMapHash: "bpf_dtab", CPUMap: "bpf_cpu_map", XSKMap: "xsk_map",
		Stack: "bpf_queue_stack", BloomFilter: "bpf_bloom_filter", SockMap: "bpf_stab", SockHash: "bpf_shtab",
		CgroupStorage: "bpf_cgroup_storage_map", SkStorage: "bpf_local_storage_map", ReuseportSockArray: "reuseport_array",
		CgroupArray: "bpf_array", 26: "bpf_map"} {
		if got := typ.KernelStruct(); got != want {
			t.Errorf("%s: kernel struct %s, want %s", typ, got, want)
		}
	}
}
