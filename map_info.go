package bpfvm

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// objNameLen is the kernel's BPF_OBJ_NAME_LEN: names are kept to 15 bytes
// and a NUL.
const objNameLen = 16

// MapInfo describes a map as the kernel's BPF_OBJ_GET_INFO_BY_FD does, with
// cilium/ebpf's MapInfo fields and methods.
type MapInfo struct {
	Type       ebpf.MapType
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	Flags      uint32
	// Name is the map's name as the kernel keeps it: its first 15 bytes.
	Name string

	id       ebpf.MapID
	mapExtra uint64
	frozen   bool
}

// Info returns the map's description, as cilium/ebpf's Map.Info. It fails
// with ErrClosed on a closed map.
func (m *Map) Info() (*MapInfo, error) {
	if err := m.hold("info"); err != nil {
		return nil, err
	}
	defer m.m.Release()
	s := m.m.Spec()
	name := m.name
	if len(name) > objNameLen-1 {
		name = name[:objNameLen-1]
	}
	return &MapInfo{
		Type: ebpf.MapType(s.Type), KeySize: s.KeySize, ValueSize: s.ValueSize,
		MaxEntries: s.MaxEntries, Flags: s.Flags, Name: name,
		id: ebpf.MapID(m.m.ID()), mapExtra: s.MapExtra, frozen: m.m.Frozen(),
	}, nil
}

// ID returns the map's id (Map.ID), and true.
func (mi *MapInfo) ID() (ebpf.MapID, bool) { return mi.id, mi.id > 0 }

// BTFID returns false: bpfvm keeps no BTF objects for maps.
func (mi *MapInfo) BTFID() (btf.ID, bool) { return 0, false }

// MapExtra returns the map's map_extra (a bloom filter's hash count, for
// one), and whether it is set.
func (mi *MapInfo) MapExtra() (uint64, bool) { return mi.mapExtra, mi.mapExtra > 0 }

// Memlock returns false: bpfvm does not account map memory as the kernel
// charges it.
func (mi *MapInfo) Memlock() (uint64, bool) { return 0, false }

// Frozen reports whether the map is frozen (Map.Freeze).
func (mi *MapInfo) Frozen() bool { return mi.frozen }
