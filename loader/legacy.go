package loader

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
)

// Sizes of the legacy map definitions.
const (
	// mapDefSize is struct bpf_map_def: type, key_size, value_size,
	// max_entries, map_flags, all u32.
	mapDefSize = 20
	// elfMapSize is iproute2's struct bpf_elf_map: the bpf_map_def fields
	// followed by id, pinning, inner_id and inner_idx.
	elfMapSize = 36
)

// numaNode is BPF_F_NUMA_NODE, the map flag that makes samples/bpf's
// numa_node field count.
const numaNode = 1 << 2

// pinGlobalNS is iproute2's PIN_GLOBAL_NS (include/bpf_elf.h): pin by name
// in a directory shared by all objects. The other values are PIN_NONE (0),
// PIN_OBJECT_NS (1, a directory per object) and custom paths from
// /etc/iproute2/bpf_pinning (3 and up).
const pinGlobalNS = 2

// noInnerIdx in inner_idx tells tc not to store a map in its outer map.
const noInnerIdx = math.MaxUint32

// legacyMap is one entry of a legacy maps section.
type legacyMap struct {
	name string

	typ, keySize, valueSize, maxEntries, flags uint32

	// Only set for struct bpf_elf_map entries.
	elfMap                         bool
	id, pinning, innerID, innerIdx uint32
}

// legacyMaps is what scanLegacyMaps found in an object.
type legacyMaps struct {
	maps []legacyMap

	// Byte ranges to overwrite before cilium/ebpf reads the object.
	patches []patch

	symtab *elf.Section
	class  elf.Class
	order  binary.ByteOrder
}

// isLegacyMapSection reports whether cilium/ebpf treats a section as a
// legacy maps section; the rules must match so both parse the same bytes.
func isLegacyMapSection(sec *elf.Section) bool {
	return strings.HasPrefix(sec.Name, "maps")
}

// scanLegacyMaps decodes the legacy maps sections of the object in r. It
// returns nil if there are none. Sections in a shape cilium/ebpf rejects by
// itself (compressed, no symbols) are left for it to report.
func scanLegacyMaps(r io.ReaderAt) (*legacyMaps, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}

	var secs []int
	for i, sec := range f.Sections {
		if isLegacyMapSection(sec) {
			secs = append(secs, i)
		}
	}
	if len(secs) == 0 {
		return nil, nil
	}

	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("load symbols: %w", err)
	}

	lm := &legacyMaps{
		symtab: f.SectionByType(elf.SHT_SYMTAB),
		class:  f.Class,
		order:  f.ByteOrder,
	}
	for _, idx := range secs {
		if err := lm.scanSection(f.Sections[idx], elf.SectionIndex(idx), syms); err != nil {
			return nil, fmt.Errorf("section %s: %w", f.Sections[idx].Name, err)
		}
	}
	return lm, nil
}

// scanSection decodes one legacy maps section.
func (lm *legacyMaps) scanSection(sec *elf.Section, idx elf.SectionIndex, syms []elf.Symbol) error {
	if sec.Flags&elf.SHF_COMPRESSED != 0 || sec.Type == elf.SHT_NOBITS {
		return nil
	}

	// cilium/ebpf keys map symbols by offset, so the last of several
	// symbols at one offset names the map; do the same.
	byOffset := make(map[uint64]int)
	for i, sym := range syms {
		typ := elf.ST_TYPE(sym.Info)
		if sym.Section != idx || sym.Name == "" || (typ != elf.STT_NOTYPE && typ != elf.STT_OBJECT) {
			continue
		}
		byOffset[sym.Value] = i
	}
	if len(byOffset) == 0 {
		return nil
	}

	data, err := sec.Data()
	if err != nil {
		return err
	}

	// Symbol sizes are not reliable in old objects, so like libbpf and tc
	// derive the entry size from the section and check every symbol sits
	// on an entry boundary.
	n := uint64(len(byOffset))
	size := uint64(len(data))
	if size == 0 || size%n != 0 {
		return fmt.Errorf("%d bytes do not divide into %d map definitions", size, n)
	}
	entry := size / n

	for _, off := range slices.Sorted(maps.Keys(byOffset)) {
		i := byOffset[off]
		sym := syms[i]
		switch {
		// With size a multiple of entry, this keeps off+entry in bounds
		// without computing it (off comes from the file and may be huge).
		case off >= size || off%entry != 0:
			return fmt.Errorf("entry %q at offset %d is not on a %d-byte boundary", sym.Name, off, entry)
		case sym.Size != 0 && sym.Size != entry:
			return fmt.Errorf("entry %q is %d bytes, other entries are %d", sym.Name, sym.Size, entry)
		case entry < mapDefSize:
			// iproute2 reads 16 bytes (bpf_elf_map_min), but
			// cilium/ebpf needs the flags: no toolchain wrote those.
			return fmt.Errorf("entry %q is %d bytes, want %d (bpf_map_def) to %d (bpf_elf_map)", sym.Name, entry, mapDefSize, elfMapSize)
		}

		m, err := decodeMapDef(data[off:off+entry], lm.order)
		if err != nil {
			return fmt.Errorf("entry %q: %w", sym.Name, err)
		}
		m.name = sym.Name
		lm.maps = append(lm.maps, m)

		if sym.Size == 0 {
			if err := lm.setSymbolSize(i, entry); err != nil {
				return fmt.Errorf("entry %q: %w", sym.Name, err)
			}
		}
	}
	return nil
}

// decodeMapDef decodes a legacy map definition of len(raw) bytes (at
// least 20):
//
//   - 20 bytes: a bpf_map_def.
//   - 24 to 36 bytes: a bpf_elf_map or a prefix of one, the missing fields
//     zero, as iproute2 reads an older or shorter struct bpf_elf_map (28
//     bytes in older Cilium objects: no inner_id or inner_idx). With
//     BPF_F_NUMA_NODE in the flags, a 24- or 28-byte definition is the
//     kernel's old samples/bpf bpf_map_def instead, whose sixth and
//     seventh fields are inner_map_idx and numa_node: bpfvm has one NUMA
//     node, so both are ignored.
//   - More: a bpf_map_def whose trailing bytes must be zero, as libbpf
//     reads one.
func decodeMapDef(raw []byte, bo binary.ByteOrder) (legacyMap, error) {
	u32 := func(i int) uint32 {
		if 4*i+4 > len(raw) {
			return 0
		}
		return bo.Uint32(raw[4*i:])
	}
	m := legacyMap{
		typ:        u32(0),
		keySize:    u32(1),
		valueSize:  u32(2),
		maxEntries: u32(3),
		flags:      u32(4),
	}
	switch {
	case len(raw)%4 != 0:
		return legacyMap{}, fmt.Errorf("%d-byte definition is not a whole number of 4-byte fields", len(raw))
	case len(raw) == mapDefSize:
		return m, nil
	case len(raw) <= elfMapSize:
		if m.flags&numaNode != 0 && len(raw) <= 28 {
			return m, nil
		}
		m.elfMap = true
		// Missing fields read as zero, as iproute2 fills them (a
		// 32-byte definition's inner_idx is then 0, where tc stores a
		// map with an id in its outer map).
		m.id, m.pinning, m.innerID, m.innerIdx = u32(5), u32(6), u32(7), u32(8)
		return m, nil
	}

	// Longer bpf_map_defs are accepted when the extra fields are unused,
	// as libbpf does.
	for _, b := range raw[mapDefSize:] {
		if b != 0 {
			return legacyMap{}, fmt.Errorf("%d-byte definition has non-zero fields after the %d-byte bpf_map_def", len(raw), mapDefSize)
		}
	}
	return m, nil
}

// reader returns r as cilium/ebpf must see it: with the patches applied,
// the legacy maps' and more.
func (lm *legacyMaps) reader(r io.ReaderAt, more []patch) io.ReaderAt {
	var patches []patch
	if lm != nil {
		patches = lm.patches
	}
	patches = append(slices.Clip(patches), more...)
	if len(patches) == 0 {
		return r
	}
	return &patchedReader{r, patches}
}

// apply completes the MapSpecs cilium/ebpf made from the legacy entries.
func (lm *legacyMaps) apply(spec *ebpf.CollectionSpec) error {
	if lm == nil {
		return nil
	}

	for _, m := range lm.maps {
		ms := spec.Maps[m.name]
		if ms == nil {
			return fmt.Errorf("map %s: missing from the parsed collection", m.name)
		}

		ms.Type = ebpf.MapType(m.typ)
		ms.KeySize = m.keySize
		ms.ValueSize = m.valueSize
		ms.MaxEntries = m.maxEntries
		ms.Flags = m.flags
		// The tail is decoded (bpf_elf_map) or known to be zero; left in
		// place, non-zero bytes make cilium/ebpf refuse to create the map.
		ms.Extra = nil
		if m.elfMap {
			ms.Pinning = pinType(m.pinning)
		}
	}

	return lm.applyMapInMap(spec)
}

// pinType maps iproute2 pinning to cilium/ebpf's. Only PIN_GLOBAL_NS (tc
// pins in /sys/fs/bpf/tc/globals, by name) has an equivalent, PinByName
// under CollectionOptions.Maps.PinPath; object and custom pinning fall back
// to none.
func pinType(pinning uint32) ebpf.PinType {
	if pinning == pinGlobalNS {
		return ebpf.PinByName
	}
	return ebpf.PinNone
}

// applyMapInMap wires up bpf_elf_map map-in-map fields the way tc does: an
// outer map's inner_id names the map (by id) used as the inner map template,
// and every other map with that id is stored in the outer map at its
// inner_idx.
func (lm *legacyMaps) applyMapInMap(spec *ebpf.CollectionSpec) error {
	for _, outer := range lm.maps {
		if !outer.elfMap || outer.innerID == 0 || !isMapInMap(outer.typ) {
			continue
		}

		i := slices.IndexFunc(lm.maps, func(m legacyMap) bool {
			return m.elfMap && m.id == outer.innerID
		})
		if i < 0 {
			return fmt.Errorf("map %s: inner_id %d matches no map's id", outer.name, outer.innerID)
		}
		if isMapInMap(lm.maps[i].typ) {
			return fmt.Errorf("map %s: inner map %s is itself a map of maps", outer.name, lm.maps[i].name)
		}

		tmpl := spec.Maps[lm.maps[i].name].Copy()
		// The kernel only uses the template's shape; cilium/ebpf refuses
		// pinned templates.
		tmpl.Pinning = ebpf.PinNone
		tmpl.Contents = nil

		ms := spec.Maps[outer.name]
		ms.InnerMap = tmpl

		for _, inner := range lm.maps {
			if !inner.elfMap || inner.id != outer.innerID || inner.innerID != 0 || inner.innerIdx == noInnerIdx {
				continue
			}
			ms.Contents = append(ms.Contents, ebpf.MapKV{Key: inner.innerIdx, Value: inner.name})
		}
	}
	return nil
}

func isMapInMap(typ uint32) bool {
	t := ebpf.MapType(typ)
	return t == ebpf.ArrayOfMaps || t == ebpf.HashOfMaps
}
