package maps

import (
	"errors"
	"os"
	"testing"
)

// specCase is a map spec and the error the kernel gives for it. Some specs
// cilium/ebpf refuses before asking the kernel (noKernel).
type specCase struct {
	name     string
	spec     Spec
	err      error
	noKernel bool
}

func specCases() []specCase {
	page := uint32(os.Getpagesize())
	inner := &Spec{Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}
	cases := []specCase{
		{"hash", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1}, nil, false},
		{"stack_trace", Spec{Type: StackTrace, KeySize: 4, ValueSize: 8 * 127, MaxEntries: 1000}, nil, false},
		{"stack_trace 128 frames", Spec{Type: StackTrace, KeySize: 4, ValueSize: 8 * 128, MaxEntries: 1}, ErrInvalid, false},
		{"stack_trace value 12", Spec{Type: StackTrace, KeySize: 4, ValueSize: 12, MaxEntries: 1}, ErrInvalid, false},
		{"stack_trace value 4", Spec{Type: StackTrace, KeySize: 4, ValueSize: 4, MaxEntries: 1}, ErrInvalid, false},
		{"stack_trace key 8", Spec{Type: StackTrace, KeySize: 8, ValueSize: 8, MaxEntries: 1}, ErrInvalid, false},
		{"stack_trace max 0", Spec{Type: StackTrace, KeySize: 4, ValueSize: 8}, ErrInvalid, false},
		{"stack_trace build id", Spec{Type: StackTrace, KeySize: 4, ValueSize: 64, MaxEntries: 1, Flags: FlagStackBuildID}, nil, false},
		{"stack_trace build id value 40", Spec{Type: StackTrace, KeySize: 4, ValueSize: 40, MaxEntries: 1, Flags: FlagStackBuildID}, ErrInvalid, false},
		{"stack_trace rdonly_prog", Spec{Type: StackTrace, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: FlagRdonlyProg}, ErrInvalid, false},
		{"stack_trace rdonly", Spec{Type: StackTrace, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: FlagRdonly}, nil, false},
		{"stack_trace max 2^31+1", Spec{Type: StackTrace, KeySize: 4, ValueSize: 8, MaxEntries: 1<<31 + 1}, ErrFull, false},
		{"hash key 0", Spec{Type: Hash, KeySize: 0, ValueSize: 4, MaxEntries: 1}, ErrInvalid, false},
		{"hash value 0", Spec{Type: Hash, KeySize: 4, ValueSize: 0, MaxEntries: 1}, ErrInvalid, false},
		{"hash max 0", Spec{Type: Hash, KeySize: 4, ValueSize: 4}, ErrInvalid, false},
		{"hash key 600", Spec{Type: Hash, KeySize: 600, ValueSize: 4, MaxEntries: 1}, nil, false},
		{"hash key+value too big", Spec{Type: Hash, KeySize: 4, ValueSize: kmallocMaxSize, MaxEntries: 1}, ErrFull, false},
		{"hash no_prealloc", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, nil, false},
		{"hash zero_seed", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagZeroSeed}, nil, false},
		{"hash no_common_lru", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoCommonLRU}, ErrInvalid, false},
		{"hash mmapable", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable}, ErrInvalid, false},
		{"hash inner_map flag", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagInnerMap}, ErrInvalid, false},
		{"hash rdonly_prog", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonlyProg}, nil, false},
		{"hash rdonly+wronly prog", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonlyProg | FlagWronlyProg}, ErrInvalid, false},
		{"hash unknown flag", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: 1 << 25}, ErrInvalid, false},
		{"percpu_hash value 32k", Spec{Type: PerCPUHash, KeySize: 4, ValueSize: 32 << 10, MaxEntries: 1}, nil, false},
		{"percpu_hash value over 32k", Spec{Type: PerCPUHash, KeySize: 4, ValueSize: 32<<10 + 1, MaxEntries: 1}, ErrFull, false},
		{"lru_hash no_prealloc", Spec{Type: LRUHash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrNotSupported, false},
		{"lru_hash no_common_lru", Spec{Type: LRUHash, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: FlagNoCommonLRU}, nil, false},
		{"lru_percpu_hash", Spec{Type: LRUPerCPUHash, KeySize: 4, ValueSize: 4, MaxEntries: 4}, nil, false},
		{"array key 8", Spec{Type: Array, KeySize: 8, ValueSize: 4, MaxEntries: 1}, ErrInvalid, false},
		{"array mmapable", Spec{Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable}, nil, false},
		{"array no_prealloc", Spec{Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"array value too big", Spec{Type: Array, KeySize: 4, ValueSize: 1 << 31, MaxEntries: 1}, ErrFull, false},
		{"array inner_map flag", Spec{Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagInnerMap}, nil, false},
		{"percpu_array inner_map flag", Spec{Type: PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagInnerMap}, ErrInvalid, false},
		{"percpu_array value over 32k", Spec{Type: PerCPUArray, KeySize: 4, ValueSize: 32<<10 + 1, MaxEntries: 1}, ErrFull, false},
		{"hash key+value at the limit", Spec{Type: Hash, KeySize: kmallocMaxSize - 56, ValueSize: 4, MaxEntries: 1}, nil, false},
		{"hash max_entries over 2^31", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1<<31 + 1}, ErrFull, false},
		{"queue value too big", Spec{Type: Queue, ValueSize: kmallocMaxSize + 1, MaxEntries: 1}, ErrFull, false},
		{"array_of_maps inner_map flag", Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagInnerMap, InnerMap: inner}, ErrInvalid, false},
		{"array_of_maps of ringbufs", Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: &Spec{Type: RingBuf, MaxEntries: page}}, nil, false},
		{"percpu_array mmapable", Spec{Type: PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable}, ErrInvalid, false},
		{"prog_array", Spec{Type: ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 1}, nil, false},
		{"prog_array value 8", Spec{Type: ProgArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}, ErrInvalid, false},
		{"prog_array rdonly_prog", Spec{Type: ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonlyProg}, ErrInvalid, false},
		{"queue", Spec{Type: Queue, ValueSize: 4, MaxEntries: 1}, nil, false},
		{"queue key 4", Spec{Type: Queue, KeySize: 4, ValueSize: 4, MaxEntries: 1}, ErrInvalid, false},
		{"stack value 0", Spec{Type: Stack, ValueSize: 0, MaxEntries: 1}, ErrInvalid, false},
		{"stack max 0", Spec{Type: Stack, ValueSize: 4}, ErrInvalid, false},
		{"stack no_prealloc", Spec{Type: Stack, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"ringbuf", Spec{Type: RingBuf, MaxEntries: page}, nil, false},
		{"ringbuf 0", Spec{Type: RingBuf}, ErrInvalid, false},
		{"ringbuf not a power of two", Spec{Type: RingBuf, MaxEntries: 3 * page}, ErrInvalid, false},
		{"ringbuf not page aligned", Spec{Type: RingBuf, MaxEntries: page / 2}, ErrInvalid, false},
		{"ringbuf key", Spec{Type: RingBuf, KeySize: 4, MaxEntries: page}, ErrInvalid, false},
		{"ringbuf flag", Spec{Type: RingBuf, MaxEntries: page, Flags: FlagRdonlyProg}, ErrInvalid, false},
		{"array_of_maps", Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: inner}, nil, false},
		{"array_of_maps value 8", Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 8, MaxEntries: 1, InnerMap: inner}, ErrInvalid, true},
		{"hash_of_maps", Spec{Type: HashOfMaps, KeySize: 8, ValueSize: 4, MaxEntries: 1, InnerMap: inner}, nil, false},
		{"hash_of_maps value 8", Spec{Type: HashOfMaps, KeySize: 4, ValueSize: 8, MaxEntries: 1, InnerMap: inner}, ErrInvalid, true},
		{"hash_of_maps of prog arrays", Spec{Type: HashOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1,
			InnerMap: &Spec{Type: ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 1}}, ErrNotSupported, false},
		{"hash map_extra", Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, MapExtra: 1}, ErrInvalid, false},
		{"lpm ipv4", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, nil, false},
		{"lpm ipv6", Spec{Type: LPMTrie, KeySize: 20, ValueSize: 8, MaxEntries: 1 << 20, Flags: FlagNoPrealloc}, nil, false},
		{"lpm data 1", Spec{Type: LPMTrie, KeySize: 5, ValueSize: 1, MaxEntries: 1, Flags: FlagNoPrealloc}, nil, false},
		{"lpm data 256", Spec{Type: LPMTrie, KeySize: 260, ValueSize: 1, MaxEntries: 1, Flags: FlagNoPrealloc}, nil, false},
		{"lpm data 257", Spec{Type: LPMTrie, KeySize: 261, ValueSize: 1, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"lpm data 0", Spec{Type: LPMTrie, KeySize: 4, ValueSize: 1, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"lpm key 0", Spec{Type: LPMTrie, KeySize: 0, ValueSize: 1, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"lpm value 0", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 0, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"lpm value at the limit", Spec{Type: LPMTrie, KeySize: 8, ValueSize: lpmValueMax, MaxEntries: 1, Flags: FlagNoPrealloc}, nil, false},
		{"lpm value over the limit", Spec{Type: LPMTrie, KeySize: 8, ValueSize: lpmValueMax + 1, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"lpm max 0", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"lpm max 2^32-1", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1<<32 - 1, Flags: FlagNoPrealloc}, nil, false},
		{"lpm preallocated", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1}, ErrInvalid, false},
		{"lpm rdonly_prog", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc | FlagRdonlyProg}, nil, false},
		{"lpm numa", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc | FlagNumaNode}, nil, false},
		{"lpm zero_seed", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc | FlagZeroSeed}, ErrInvalid, false},
		{"lpm mmapable", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc | FlagMmapable}, ErrInvalid, false},
		{"lpm rdonly+wronly", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc | FlagRdonly | FlagWronly}, ErrInvalid, false},
		{"lpm map_extra", Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc, MapExtra: 1}, ErrInvalid, false},
		{"bloom", Spec{Type: BloomFilter, ValueSize: 4, MaxEntries: 1}, nil, false},
		{"bloom 15 hashes", Spec{Type: BloomFilter, ValueSize: 13, MaxEntries: 100, MapExtra: 15}, nil, false},
		{"bloom 16 hashes", Spec{Type: BloomFilter, ValueSize: 4, MaxEntries: 1, MapExtra: 16}, ErrInvalid, false},
		{"bloom map_extra high", Spec{Type: BloomFilter, ValueSize: 4, MaxEntries: 1, MapExtra: 1 << 40}, ErrInvalid, false},
		{"bloom key 4", Spec{Type: BloomFilter, KeySize: 4, ValueSize: 4, MaxEntries: 1}, ErrInvalid, false},
		{"bloom value 0", Spec{Type: BloomFilter, ValueSize: 0, MaxEntries: 1}, ErrInvalid, false},
		{"bloom max 0", Spec{Type: BloomFilter, ValueSize: 4}, ErrInvalid, false},
		{"bloom value too big", Spec{Type: BloomFilter, ValueSize: kmallocMaxSize + 1, MaxEntries: 1}, ErrFull, false},
		{"bloom zero_seed", Spec{Type: BloomFilter, ValueSize: 4, MaxEntries: 1, Flags: FlagZeroSeed}, nil, false},
		{"bloom no_prealloc", Spec{Type: BloomFilter, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, ErrInvalid, false},
		{"bloom rdonly_prog", Spec{Type: BloomFilter, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonlyProg}, nil, false},
		{"bloom huge", Spec{Type: BloomFilter, ValueSize: 8, MaxEntries: 1<<32 - 1, MapExtra: 15}, nil, false},
	}
	return append(cases, netSpecCases()...)
}

func TestValidate(t *testing.T) {
	for _, tt := range specCases() {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.spec, Options{NumCPU: 2})
			if m != nil {
				m.Close()
			}
			if sentinel(err) != tt.err {
				t.Errorf("New: %v, want %v", err, tt.err)
			}
		})
	}
	// Errors name the map, the field and the value.
	_, err := New(Spec{Name: "flows", Type: Hash, KeySize: 0, ValueSize: 4, MaxEntries: 1}, Options{})
	if err == nil || err.Error() != "map flows: hash key size 0: invalid argument" {
		t.Errorf("message %q", err)
	}
	if _, err := New(Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("map of maps without a template: %v", err)
	}
	nested := &Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: &Spec{Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}}
	if _, err := New(Spec{Type: HashOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: nested}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("two levels of maps of maps: %v", err)
	}
}

// netSpecCases are the specs of the cgroup and socket map types.
func netSpecCases() []specCase {
	cs := func(t Type, key, value, max, flags uint32) Spec {
		return Spec{Type: t, KeySize: key, ValueSize: value, MaxEntries: max, Flags: flags}
	}
	sk := func(key, value, max, flags uint32, btf bool) Spec {
		s := cs(SkStorage, key, value, max, flags)
		if btf {
			s = withBTF(s, true)
		}
		return s
	}
	inner := func(in Spec) Spec {
		return Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: &in}
	}
	return []specCase{
		{"cgroup_storage", cs(CgroupStorage, 16, 8, 0, 0), nil, false},
		{"cgroup_storage key 8", cs(CgroupStorage, 8, 8, 0, 0), nil, false},
		{"cgroup_storage key 12", cs(CgroupStorage, 12, 8, 0, 0), ErrInvalid, false},
		{"cgroup_storage key 4", cs(CgroupStorage, 4, 8, 0, 0), ErrInvalid, false},
		{"cgroup_storage max 1", cs(CgroupStorage, 16, 8, 1, 0), ErrInvalid, false},
		{"cgroup_storage value 0", cs(CgroupStorage, 16, 0, 0, 0), ErrInvalid, false},
		{"cgroup_storage value at the limit", cs(CgroupStorage, 16, localStorageMaxValue, 0, 0), nil, false},
		{"cgroup_storage value over the limit", cs(CgroupStorage, 16, localStorageMaxValue+1, 0, 0), ErrFull, false},
		{"cgroup_storage value over the limit, max 1", cs(CgroupStorage, 16, localStorageMaxValue+1, 1, 0), ErrFull, false},
		{"cgroup_storage numa", cs(CgroupStorage, 16, 8, 0, FlagNumaNode), nil, false},
		{"cgroup_storage rdonly_prog", cs(CgroupStorage, 16, 8, 0, FlagRdonlyProg), nil, false},
		{"cgroup_storage rdonly", cs(CgroupStorage, 16, 8, 0, FlagRdonly), nil, false},
		{"cgroup_storage no_prealloc", cs(CgroupStorage, 16, 8, 0, FlagNoPrealloc), ErrInvalid, false},
		{"cgroup_storage mmapable", cs(CgroupStorage, 16, 8, 0, FlagMmapable), ErrInvalid, false},
		{"cgroup_storage map_extra", Spec{Type: CgroupStorage, KeySize: 16, ValueSize: 8, MapExtra: 1}, ErrInvalid, false},
		{"cgroup_storage inner", inner(cs(CgroupStorage, 16, 8, 0, 0)), ErrNotSupported, false},
		{"percpu_cgroup_storage", cs(PerCPUCgroupStorage, 16, 8, 0, 0), nil, false},
		{"percpu_cgroup_storage key 8", cs(PerCPUCgroupStorage, 8, 4, 0, 0), nil, false},
		{"percpu_cgroup_storage max 4", cs(PerCPUCgroupStorage, 16, 8, 4, 0), ErrInvalid, false},
		{"percpu_cgroup_storage value 32k", cs(PerCPUCgroupStorage, 16, 32<<10, 0, 0), nil, false},
		{"percpu_cgroup_storage value over 32k", cs(PerCPUCgroupStorage, 16, 32<<10+1, 0, 0), ErrFull, false},
		{"percpu_cgroup_storage numa", cs(PerCPUCgroupStorage, 16, 8, 0, FlagNumaNode), nil, false},
		{"cgroup_array", cs(CgroupArray, 4, 4, 4, 0), nil, false},
		{"cgroup_array value 8", cs(CgroupArray, 4, 8, 4, 0), ErrInvalid, false},
		{"cgroup_array key 8", cs(CgroupArray, 8, 4, 4, 0), ErrInvalid, false},
		{"cgroup_array max 0", cs(CgroupArray, 4, 4, 0, 0), ErrInvalid, false},
		{"cgroup_array rdonly_prog", cs(CgroupArray, 4, 4, 4, FlagRdonlyProg), ErrInvalid, false},
		{"cgroup_array rdonly", cs(CgroupArray, 4, 4, 4, FlagRdonly), nil, false},
		{"cgroup_array mmapable", cs(CgroupArray, 4, 4, 4, FlagMmapable), ErrInvalid, false},
		{"cgroup_array no_prealloc", cs(CgroupArray, 4, 4, 4, FlagNoPrealloc), ErrInvalid, false},
		{"cgroup_array inner", inner(cs(CgroupArray, 4, 4, 4, 0)), nil, false},
		{"sockmap", cs(SockMap, 4, 4, 4, 0), nil, false},
		{"sockmap value 8", cs(SockMap, 4, 8, 4, 0), nil, false},
		{"sockmap value 2", cs(SockMap, 4, 2, 4, 0), ErrInvalid, false},
		{"sockmap key 8", cs(SockMap, 8, 8, 4, 0), ErrInvalid, false},
		{"sockmap max 0", cs(SockMap, 4, 8, 0, 0), ErrInvalid, false},
		{"sockmap numa", cs(SockMap, 4, 8, 4, FlagNumaNode), nil, false},
		{"sockmap rdonly", cs(SockMap, 4, 8, 4, FlagRdonly), nil, false},
		{"sockmap rdonly_prog", cs(SockMap, 4, 8, 4, FlagRdonlyProg), ErrInvalid, false},
		{"sockmap no_prealloc", cs(SockMap, 4, 8, 4, FlagNoPrealloc), ErrInvalid, false},
		{"sockmap inner", inner(cs(SockMap, 4, 8, 4, 0)), nil, false},
		{"sockhash", cs(SockHash, 4, 4, 4, 0), nil, false},
		{"sockhash key 16", cs(SockHash, 16, 8, 4, 0), nil, false},
		{"sockhash key 0", cs(SockHash, 0, 8, 4, 0), ErrInvalid, false},
		{"sockhash key 512", cs(SockHash, 512, 8, 4, 0), nil, false},
		{"sockhash key 513", cs(SockHash, 513, 8, 4, 0), ErrFull, false},
		{"sockhash key 513 value 3", cs(SockHash, 513, 3, 4, 0), ErrInvalid, false},
		{"sockhash value 16", cs(SockHash, 4, 16, 4, 0), ErrInvalid, false},
		{"sockhash max 0", cs(SockHash, 4, 8, 0, 0), ErrInvalid, false},
		{"sockhash no_prealloc", cs(SockHash, 4, 8, 4, FlagNoPrealloc), ErrInvalid, false},
		{"sockhash zero_seed", cs(SockHash, 4, 8, 4, FlagZeroSeed), ErrInvalid, false},
		{"reuseport_sockarray", cs(ReuseportSockArray, 4, 8, 4, 0), nil, false},
		{"reuseport_sockarray value 4", cs(ReuseportSockArray, 4, 4, 4, 0), nil, false},
		{"reuseport_sockarray value 2", cs(ReuseportSockArray, 4, 2, 4, 0), ErrInvalid, false},
		{"reuseport_sockarray key 8", cs(ReuseportSockArray, 8, 8, 4, 0), ErrInvalid, false},
		{"reuseport_sockarray max 0", cs(ReuseportSockArray, 4, 8, 0, 0), ErrInvalid, false},
		{"reuseport_sockarray rdonly_prog", cs(ReuseportSockArray, 4, 8, 4, FlagRdonlyProg), nil, false},
		{"reuseport_sockarray mmapable", cs(ReuseportSockArray, 4, 8, 4, FlagMmapable), ErrInvalid, false},
		{"reuseport_sockarray numa", cs(ReuseportSockArray, 4, 8, 4, FlagNumaNode), nil, false},
		{"reuseport_sockarray inner", inner(cs(ReuseportSockArray, 4, 8, 4, 0)), nil, false},
		{"sk_storage", sk(4, 8, 0, FlagNoPrealloc, true), nil, false},
		{"sk_storage clone", sk(4, 8, 0, FlagNoPrealloc|FlagClone, true), nil, false},
		{"sk_storage without BTF", sk(4, 8, 0, FlagNoPrealloc, false), ErrInvalid, false},
		{"sk_storage struct key", withBTF(Spec{Type: SkStorage, KeySize: 4, ValueSize: 8, Flags: FlagNoPrealloc}, false), ErrInvalid, false},
		{"sk_storage preallocated", sk(4, 8, 0, 0, true), ErrInvalid, false},
		{"sk_storage rdonly_prog", sk(4, 8, 0, FlagNoPrealloc|FlagRdonlyProg, true), ErrInvalid, false},
		{"sk_storage numa", sk(4, 8, 0, FlagNoPrealloc|FlagNumaNode, true), ErrInvalid, false},
		{"sk_storage max 1", sk(4, 8, 1, FlagNoPrealloc, true), ErrInvalid, false},
		{"sk_storage key 8", sk(8, 8, 0, FlagNoPrealloc, false), ErrInvalid, false},
		{"sk_storage value 0", sk(4, 0, 0, FlagNoPrealloc, false), ErrInvalid, false},
		{"sk_storage value at the limit", sk(4, localStorageMaxValue, 0, FlagNoPrealloc, true), nil, false},
		{"sk_storage value over the limit", sk(4, localStorageMaxValue+1, 0, FlagNoPrealloc, true), ErrFull, false},
		{"sk_storage inner", inner(sk(4, 8, 0, FlagNoPrealloc, true)), nil, false},
	}
}
