package maps

import (
	"fmt"
	"slices"
)

// Type is a map type, numbered as the kernel's enum bpf_map_type.
//
// Each type bpfvm implements is one description (typeInfo) in the file of
// its family (array.go, hash.go, lpm.go…), listed once in types: what
// creates and validates its maps, and the rules the verifier and the API
// ask of it through Type's methods. Adding a map type touches that file
// and the list.
type Type uint32

// typeInfo describes a map type bpfvm implements.
type typeInfo struct {
	// maps creates and validates the type's maps.
	maps family
	// helpers names the helpers that take a map of the type as their map
	// argument (kernel names): both halves of the kernel's
	// check_map_func_compatibility in one list. A helper some type names
	// takes only the types that name it; see onlyHelpers for the others.
	helpers []string
	// onlyHelpers is set for the types the kernel gives only some
	// helpers (its map-side half has a case for them): no helper outside
	// helpers takes them. Helpers no type names (host helpers) take the
	// other types.
	onlyHelpers bool
	// kernelStruct is the kernel struct a map of the type is (its
	// map_btf_id), which embeds struct bpf_map first.
	kernelStruct string
	// perCPU: one value per CPU per element.
	perCPU bool
	// ofMaps: the values are maps of the inner template; a lookup gives
	// an inner map.
	ofMaps bool
	// sizedInBytes: max_entries is a buffer size in bytes, which
	// the family checks (zero included), not an element count.
	sizedInBytes bool
	// mapExtra: the spec's MapExtra means something (others require 0).
	mapExtra bool
	// notInner: the type cannot be the inner map of a map of maps
	// (EOPNOTSUPP).
	notInner bool
	// progReadOnly: programs may not write the values (as if
	// BPF_F_RDONLY_PROG: the kernel's lookup gives its own object).
	progReadOnly bool
	// socketValues: a lookup's non-NULL result is an XDP socket (struct
	// bpf_xdp_sock), not a value.
	socketValues bool
	// indexed: the keys are the indexes below max_entries, each always
	// with an element (arrays).
	indexed bool
	// directValue: programs may address the values directly (LD_IMM64
	// with a map value pseudo source: the kernel's map_direct_value_addr).
	directValue bool
	// valueIsKey: the value is what a lookup looks for (bloom filters:
	// push adds it, peek and the lookup syscall test it).
	valueIsKey bool
	// noEntries: max_entries must be 0 (EINVAL otherwise): the
	// elements come with the cgroups or sockets they belong to.
	noEntries bool
	// refSockets: the values are sockets, and a program's lookup gives a
	// referenced socket (sockmaps, sockhashes, reuseport arrays).
	refSockets bool
	// noBatch: the kernel has no batch operations for the type
	// (ENOTSUPP).
	noBatch bool
	// noBatchLookupAndDelete: batch lookup-and-delete is EOPNOTSUPP,
	// the other batch operations are the kernel's generic ones.
	noBatchLookupAndDelete bool
}

// family creates and validates the maps of a family's types. Each family
// file has one, an empty struct: held as an interface, its methods are no
// initialization dependency of the descriptions (constructors call New,
// validators ask the type's description), so the descriptions can be
// package variables without a cycle.
type family interface {
	// create makes a map from a spec check accepted.
	create(Spec, Options) (Map, error)
	// check validates a spec as the type's map_alloc_check does, after
	// the checks common to every type.
	check(Spec) error
}

// types are the map types bpfvm implements, each described in its
// family's file. Read-only.
var types = [maxType]*typeInfo{
	Hash:           &hashInfo,
	Array:          &arrayInfo,
	ProgArray:      &progArrayInfo,
	PerfEventArray: &perfEventArrayInfo,
	PerCPUHash:     &perCPUHashInfo,
	PerCPUArray:    &perCPUArrayInfo,
	LRUHash:        &hashInfo,
	LRUPerCPUHash:  &perCPUHashInfo,
	LPMTrie:        &lpmInfo,
	ArrayOfMaps:    &arrayOfMapsInfo,
	HashOfMaps:     &hashOfMapsInfo,
	DevMap:         &devMapInfo,
	CPUMap:         &cpuMapInfo,
	XSKMap:         &xskMapInfo,
	Queue:          &queueInfo,
	Stack:          &queueInfo,
	DevMapHash:     &devMapInfo,
	RingBuf:        &ringBufInfo,
	BloomFilter:    &bloomInfo,
	Arena:          &arenaInfo,

	CgroupArray:         &cgroupArrayInfo,
	CgroupStorage:       &cgroupStorageInfo,
	PerCPUCgroupStorage: &perCPUCgroupStorageInfo,
	SockMap:             &sockMapInfo,
	SockHash:            &sockHashInfo,
	ReuseportSockArray:  &reuseportInfo,
	SkStorage:           &skStorageInfo,
	StackTrace:          &stackTraceInfo,
}

// noInfo is the description of the types bpfvm does not implement.
var noInfo typeInfo

// info returns the description of a type, and whether bpfvm implements
// it (noInfo if not).
func (t Type) info() (*typeInfo, bool) {
	if t < maxType && types[t] != nil {
		return types[t], true
	}
	return &noInfo, false
}

// maxType bounds the map type numbers types holds.
const maxType Type = 64

// Implemented reports whether bpfvm implements maps of this type.
func (t Type) Implemented() bool {
	_, ok := t.info()
	return ok
}

// PerCPU reports whether maps of this type keep one value per CPU.
func (t Type) PerCPU() bool {
	info, _ := t.info()
	return info.perCPU
}

// OfMaps reports whether maps of this type hold maps (their lookups give
// an inner map of the spec's InnerMap).
func (t Type) OfMaps() bool {
	info, _ := t.info()
	return info.ofMaps
}

// ProgReadOnly reports whether programs may never write the values of
// maps of this type, whatever their flags (devmaps: the kernel sets
// BPF_F_RDONLY_PROG itself).
func (t Type) ProgReadOnly() bool {
	info, _ := t.info()
	return info.progReadOnly
}

// SocketValues reports whether a lookup's non-NULL result is an XDP socket
// (xskmaps), which programs read only the queue id of.
func (t Type) SocketValues() bool {
	info, _ := t.info()
	return info.socketValues
}

// RefSockets reports whether the values of maps of this type are sockets
// that a program's lookup takes a reference to (the kernel's
// PTR_TO_SOCKET_OR_NULL, released with bpf_sk_release): sockmaps,
// sockhashes and reuseport socket arrays.
func (t Type) RefSockets() bool {
	info, _ := t.info()
	return info.refSockets
}

// NoEntries reports whether maps of this type must have max_entries 0:
// their elements come with the cgroups or sockets they belong to (cgroup
// storages, socket storages).
func (t Type) NoEntries() bool {
	info, _ := t.info()
	return info.noEntries
}

// Indexed reports whether the keys of maps of this type are the indexes
// below max_entries, each always with an element (arrays): a lookup with
// a smaller constant key cannot miss, and walks go by index.
func (t Type) Indexed() bool {
	info, _ := t.info()
	return info.indexed
}

// DirectValue reports whether programs may address the values of maps of
// this type directly (LD_IMM64 with a map value pseudo source, the
// kernel's map_direct_value_addr).
func (t Type) DirectValue() bool {
	info, _ := t.info()
	return info.directValue
}

// ValueIsKey reports whether the value is what a lookup looks for (bloom
// filters: bpf_map_peek_elem and the lookup syscall test the value given,
// and leave it as it is).
func (t Type) ValueIsKey() bool {
	info, _ := t.info()
	return info.valueIsKey
}

// BatchLookupAndDelete reports whether maps of this type may take batch
// lookup-and-delete: not LPM tries, whose batch operations are the
// kernel's generic ones, which have none.
func (t Type) BatchLookupAndDelete() bool {
	info, _ := t.info()
	return !info.noBatchLookupAndDelete
}

// Batch reports whether maps of this type take the batch operations (the
// kernel has none for the cgroup and socket types).
func (t Type) Batch() bool {
	info, _ := t.info()
	return !info.noBatch
}

// KernelStruct is the kernel struct a map of this type is, which embeds
// struct bpf_map first: what a program reading through a map pointer
// reads ("bpf_map" for types bpfvm does not implement).
func (t Type) KernelStruct() string {
	if info, ok := t.info(); ok {
		return info.kernelStruct
	}
	return "bpf_map"
}

// TakesHelper reports whether the helper of that (kernel) name may take a
// map of this type as its map argument, as the kernel's
// check_map_func_compatibility judges: a helper some type names takes only
// the types that name it, and a type that takes only some helpers takes no
// other. A helper no type names (a host helper) takes the other types.
func (t Type) TakesHelper(helper string) bool {
	info, _ := t.info()
	if slices.Contains(info.helpers, helper) {
		return true
	}
	return !info.onlyHelpers && !namedHelper(helper)
}

// namedHelper reports whether some type names the helper.
func namedHelper(helper string) bool {
	for _, info := range types {
		if info != nil && slices.Contains(info.helpers, helper) {
			return true
		}
	}
	return false
}

// kernelNames are the kernel's names of map types (enum bpf_map_type
// without its prefix), as bpftool and libbpf print them, implemented or
// not.
var kernelNames = [...]string{
	"unspec", "hash", "array", "prog_array", "perf_event_array", "percpu_hash",
	"percpu_array", "stack_trace", "cgroup_array", "lru_hash", "lru_percpu_hash",
	"lpm_trie", "array_of_maps", "hash_of_maps", "devmap", "sockmap", "cpumap",
	"xskmap", "sockhash", "cgroup_storage", "reuseport_sockarray",
	"percpu_cgroup_storage", "queue", "stack", "sk_storage", "devmap_hash",
	"struct_ops", "ringbuf", "inode_storage", "task_storage", "bloom_filter",
	"user_ringbuf", "cgrp_storage", "arena",
}

// String is the kernel's name of the type ("hash", "lpm_trie",
// "perf_event_array"…), or "type N" for a number the kernel has no name
// for here.
func (t Type) String() string {
	if int(t) < len(kernelNames) {
		return kernelNames[t]
	}
	return fmt.Sprintf("type %d", uint32(t))
}

// Helper lists the families share (kernel names).
var (
	// elemHelpers take maps whose elements programs look up, update
	// and delete by key.
	elemHelpers = []string{"bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem"}
	// walkHelpers add bpf_for_each_map_elem, for the types with the
	// kernel's map_for_each_callback.
	walkHelpers = []string{"bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem", "bpf_for_each_map_elem"}
	// perCPUHelpers add bpf_map_lookup_percpu_elem, which takes only
	// per-CPU maps.
	perCPUHelpers = []string{"bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem", "bpf_for_each_map_elem", "bpf_map_lookup_percpu_elem"}
)
