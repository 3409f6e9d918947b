package maps

import (
	"fmt"
	"math/bits"
	"os"
	"slices"
)

// Limits the kernel puts on map specs.
const (
	// kmallocMaxSize is KMALLOC_MAX_SIZE on x86-64 (4 MiB): the largest
	// value (and, for hash maps, key plus value) the syscall interface can
	// copy.
	kmallocMaxSize = 1 << 22
	// pcpuMinUnitSize is PCPU_MIN_UNIT_SIZE, the cap on a per-CPU value.
	pcpuMinUnitSize = 32 << 10
	// hashElemOverhead stands for sizeof(struct htab_elem) in the kernel's
	// key+value size check.
	hashElemOverhead = 48
	// maxArrayValue is the kernel's cap on array values (INT_MAX).
	maxArrayValue = 1<<31 - 1
	// maxMapBytes caps the off-heap memory of one map.
	maxMapBytes = 1 << 36
)

// Flag sets each kind of map accepts, as the kernel's *_CREATE_FLAG_MASK.
const (
	flagsAccess = FlagRdonly | FlagWronly | FlagRdonlyProg | FlagWronlyProg
	flagsArray  = FlagNumaNode | FlagMmapable | flagsAccess | FlagPreserveElems | FlagInnerMap
	flagsHash   = FlagNoPrealloc | FlagNoCommonLRU | FlagNumaNode | flagsAccess | FlagZeroSeed
	flagsQueue  = FlagNumaNode | flagsAccess
	flagsRing   = FlagNumaNode
)

// ringBufMaxData is RINGBUF_MAX_DATA_SZ: the page offset in a record header
// has 24 useful bits.
var ringBufMaxData = uint64(1<<24-3) * uint64(os.Getpagesize())

// validate checks a spec as the kernel's map_alloc_check functions do, with
// their errors: ErrInvalid for malformed specs, ErrFull (E2BIG) for sizes
// over a limit, ErrNotSupported for combinations the kernel does not
// implement. Types bpfvm does not implement pass (New refuses them).
func validate(s Spec) error {
	if s.Flags&(FlagRdonly|FlagWronly) == FlagRdonly|FlagWronly ||
		s.Flags&(FlagRdonlyProg|FlagWronlyProg) == FlagRdonlyProg|FlagWronlyProg {
		return fmt.Errorf("flags %#x: conflicting access flags: %w", s.Flags, ErrInvalid)
	}
	info, _ := s.Type.info()
	if s.MapExtra != 0 && !info.mapExtra {
		return fmt.Errorf("%s map_extra %#x: only bloom filters and arenas take it: %w", s.Type, s.MapExtra, ErrInvalid)
	}
	if info.maps != nil {
		if err := info.maps.check(s); err != nil {
			return err
		}
	}
	fields, err := s.Fields()
	if err != nil {
		return fmt.Errorf("%s value BTF: %w", s.Type, err)
	}
	if err := checkFieldTypes(s, fields); err != nil {
		return err
	}
	if info.ofMaps {
		return validateInner(s)
	}
	return nil
}

func checkFlagSet(s Spec, allowed uint32) error {
	if bad := s.Flags &^ allowed; bad != 0 {
		return fmt.Errorf("%s flags %#x: unknown flags %#x: %w", s.Type, s.Flags, bad, ErrInvalid)
	}
	return nil
}

func validateArray(s Spec) error {
	if s.KeySize != 4 {
		return fmt.Errorf("%s key size %d, want 4: %w", s.Type, s.KeySize, ErrInvalid)
	}
	if s.ValueSize == 0 {
		return fmt.Errorf("%s value size 0: %w", s.Type, ErrInvalid)
	}
	if err := checkFlagSet(s, flagsArray); err != nil {
		return err
	}
	if s.Flags&(FlagMmapable|FlagInnerMap) != 0 && s.Type != Array {
		return fmt.Errorf("%s flags %#x: mmapable and inner_map are for arrays only: %w", s.Type, s.Flags, ErrInvalid)
	}
	if s.Flags&FlagPreserveElems != 0 && s.Type != PerfEventArray {
		return fmt.Errorf("%s flags %#x: preserve_elems is for perf event arrays: %w", s.Type, s.Flags, ErrInvalid)
	}
	if s.Type.PerCPU() && s.Flags&FlagNumaNode != 0 {
		return fmt.Errorf("%s flags %#x: numa node with a per-CPU map: %w", s.Type, s.Flags, ErrInvalid)
	}
	switch s.Type {
	case ProgArray, ArrayOfMaps, PerfEventArray, CgroupArray:
		// fd_array_map_alloc_check: the values are file descriptors.
		if s.ValueSize != 4 {
			return fmt.Errorf("%s value size %d, want 4: %w", s.Type, s.ValueSize, ErrInvalid)
		}
		if s.Type != ArrayOfMaps && s.Flags&(FlagRdonlyProg|FlagWronlyProg) != 0 {
			return fmt.Errorf("%s flags %#x: program access flags: %w", s.Type, s.Flags, ErrInvalid)
		}
	}
	if s.ValueSize > maxArrayValue {
		return fmt.Errorf("%s value size %d over %d: %w", s.Type, s.ValueSize, maxArrayValue, ErrFull)
	}
	if s.Type.PerCPU() && (s.ValueSize+7)&^7 > pcpuMinUnitSize {
		return fmt.Errorf("%s value size %d over %d: %w", s.Type, s.ValueSize, pcpuMinUnitSize, ErrFull)
	}
	return nil
}

func validateHash(s Spec) error {
	if s.KeySize == 0 {
		return fmt.Errorf("%s key size 0: %w", s.Type, ErrInvalid)
	}
	if s.ValueSize == 0 {
		return fmt.Errorf("%s value size 0: %w", s.Type, ErrInvalid)
	}
	if s.Type == HashOfMaps && s.ValueSize != 4 {
		return fmt.Errorf("%s value size %d, want 4: %w", s.Type, s.ValueSize, ErrInvalid)
	}
	if err := checkFlagSet(s, flagsHash); err != nil {
		return err
	}
	lru := s.Type == LRUHash || s.Type == LRUPerCPUHash
	if s.Flags&FlagNoCommonLRU != 0 && !lru {
		return fmt.Errorf("%s flags %#x: no_common_lru without LRU: %w", s.Type, s.Flags, ErrInvalid)
	}
	if s.Flags&FlagNumaNode != 0 && (s.Type.PerCPU() || s.Flags&FlagNoCommonLRU != 0) {
		return fmt.Errorf("%s flags %#x: numa node with per-CPU data: %w", s.Type, s.Flags, ErrInvalid)
	}
	if lru && s.Flags&FlagNoPrealloc != 0 {
		return fmt.Errorf("%s flags %#x: LRU maps are always preallocated: %w", s.Type, s.Flags, ErrNotSupported)
	}
	if uint64(s.KeySize)+uint64(s.ValueSize) >= kmallocMaxSize-hashElemOverhead {
		return fmt.Errorf("%s key size %d + value size %d over %d: %w", s.Type, s.KeySize, s.ValueSize, kmallocMaxSize-hashElemOverhead, ErrFull)
	}
	if s.Type.PerCPU() && (s.ValueSize+7)&^7 > pcpuMinUnitSize {
		return fmt.Errorf("%s value size %d over %d: %w", s.Type, s.ValueSize, pcpuMinUnitSize, ErrFull)
	}
	if s.MaxEntries > 1<<31 {
		return fmt.Errorf("%s max_entries %d over %d: %w", s.Type, s.MaxEntries, uint32(1<<31), ErrFull)
	}
	return nil
}

func validateQueue(s Spec) error {
	if s.KeySize != 0 {
		return fmt.Errorf("%s key size %d, want 0: %w", s.Type, s.KeySize, ErrInvalid)
	}
	if s.ValueSize == 0 {
		return fmt.Errorf("%s value size 0: %w", s.Type, ErrInvalid)
	}
	if err := checkFlagSet(s, flagsQueue); err != nil {
		return err
	}
	if s.ValueSize > kmallocMaxSize {
		return fmt.Errorf("%s value size %d over %d: %w", s.Type, s.ValueSize, kmallocMaxSize, ErrFull)
	}
	return nil
}

func validateRingBuf(s Spec) error {
	if err := checkFlagSet(s, flagsRing); err != nil {
		return err
	}
	if s.KeySize != 0 || s.ValueSize != 0 {
		return fmt.Errorf("%s key size %d, value size %d, want 0: %w", s.Type, s.KeySize, s.ValueSize, ErrInvalid)
	}
	page := uint32(os.Getpagesize())
	if bits.OnesCount32(s.MaxEntries) != 1 || s.MaxEntries%page != 0 {
		return fmt.Errorf("%s max_entries %d: want a power of two multiple of the page size %d: %w", s.Type, s.MaxEntries, page, ErrInvalid)
	}
	if uint64(s.MaxEntries) > ringBufMaxData {
		return fmt.Errorf("%s max_entries %d over %d: %w", s.Type, s.MaxEntries, ringBufMaxData, ErrFull)
	}
	return nil
}

// validateInner checks the inner map template of a map of maps, as the
// kernel's bpf_map_meta_alloc does for the map behind inner_map_fd.
func validateInner(s Spec) error {
	in := s.InnerMap
	if in == nil {
		return fmt.Errorf("%s without an inner map template: %w", s.Type, ErrInvalid)
	}
	info, _ := in.Type.info()
	switch {
	case info.ofMaps:
		return fmt.Errorf("inner map of type %s: only one level of nesting: %w", in.Type, ErrInvalid)
	case info.notInner:
		return fmt.Errorf("inner map of type %s: %w", in.Type, ErrNotSupported)
	}
	if in.MaxEntries == 0 && !info.sizedInBytes && !info.noEntries {
		return fmt.Errorf("inner map: max_entries is zero: %w", ErrInvalid)
	}
	if err := validate(*in); err != nil {
		return fmt.Errorf("inner map: %w", err)
	}
	return nil
}

// checkInner reports whether m may be stored in a map of maps with template
// tmpl, as the kernel's map_meta_equal: same type, key and value size and
// flags, and for arrays the same max_entries unless the template has
// FlagInnerMap.
func checkInner(tmpl *Spec, m Map) error {
	s := m.Spec()
	switch {
	case s.Type != tmpl.Type:
		return fmt.Errorf("inner map %s is a %s, want a %s: %w", s.Name, s.Type, tmpl.Type, ErrInvalid)
	case s.KeySize != tmpl.KeySize:
		return fmt.Errorf("inner map %s: key size %d, want %d: %w", s.Name, s.KeySize, tmpl.KeySize, ErrInvalid)
	case s.ValueSize != tmpl.ValueSize:
		return fmt.Errorf("inner map %s: value size %d, want %d: %w", s.Name, s.ValueSize, tmpl.ValueSize, ErrInvalid)
	case s.Flags != tmpl.Flags:
		return fmt.Errorf("inner map %s: flags %#x, want %#x: %w", s.Name, s.Flags, tmpl.Flags, ErrInvalid)
	}
	if !slices.Equal(specFields(s), specFields(*tmpl)) {
		return fmt.Errorf("inner map %s: special fields differ from the template's: %w", s.Name, ErrInvalid)
	}
	if s.Type.Indexed() && tmpl.Flags&FlagInnerMap == 0 && s.MaxEntries != tmpl.MaxEntries {
		return fmt.Errorf("inner map %s: max_entries %d, want %d: %w", s.Name, s.MaxEntries, tmpl.MaxEntries, ErrInvalid)
	}
	return nil
}

// NumCPU returns how many CPUs' values a map keeps per element: its
// Options.NumCPU for per-CPU maps (bpf_map_lookup_percpu_elem's CPU
// bound), 1 for the others.
func NumCPU(m Map) int { return numCPU(m) }

// numCPU is NumCPU.
func numCPU(m Map) int {
	switch m := m.(type) {
	case *CgroupStorageMap:
		return numCPU(m.Map)
	case *array:
		return m.ncpu
	case *hashMap:
		return m.ncpu
	}
	return 1
}
