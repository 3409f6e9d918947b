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
	return []specCase{
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
