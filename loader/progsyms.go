package loader

import (
	"debug/elf"
	"fmt"
	"io"
	"slices"
)

// programSymbolSizes returns the patches that give the function symbols of
// program sections with no st_size their size, as libbpf and the kernel's
// samples loader take it: up to the next function symbol in the section,
// or the section's end. Old clang (before 8) and hand-written assembly
// emit program symbols without .size (and without a type); cilium/ebpf
// decodes a function's instructions from st_size, so it finds none ("no
// instructions found for symbol").
//
// The symbols are those cilium/ebpf takes as functions: named, STT_FUNC
// or STT_NOTYPE, not local NOTYPE ones (jump labels), in sections of
// executable PROGBITS.
func programSymbolSizes(r io.ReaderAt) ([]patch, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	syms, err := f.Symbols()
	if err != nil {
		// No symbol table: cilium/ebpf reports it.
		return nil, nil
	}
	bySection := map[elf.SectionIndex][]int{}
	for i, sym := range syms {
		typ, bind := elf.ST_TYPE(sym.Info), elf.ST_BIND(sym.Info)
		if sym.Name == "" || (typ != elf.STT_FUNC && typ != elf.STT_NOTYPE) || (typ == elf.STT_NOTYPE && bind == elf.STB_LOCAL) {
			continue
		}
		if int(sym.Section) >= len(f.Sections) || sym.Section == elf.SHN_UNDEF {
			continue
		}
		sec := f.Sections[sym.Section]
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Size == 0 {
			continue
		}
		bySection[sym.Section] = append(bySection[sym.Section], i)
	}
	var patches []patch
	st := f.SectionByType(elf.SHT_SYMTAB)
	for idx, list := range bySection {
		sec := f.Sections[idx]
		offsets := make([]uint64, 0, len(list))
		for _, i := range list {
			offsets = append(offsets, syms[i].Value)
		}
		slices.Sort(offsets)
		offsets = slices.Compact(offsets)
		for _, i := range list {
			sym := syms[i]
			if sym.Size != 0 || sym.Value >= sec.Size {
				continue
			}
			end := sec.Size
			if j, _ := slices.BinarySearch(offsets, sym.Value+1); j < len(offsets) {
				end = offsets[j]
			}
			p, err := symbolSizePatch(st, f.Class, f.ByteOrder, i, end-sym.Value)
			if err != nil {
				return nil, fmt.Errorf("section %s: symbol %s: %w", sec.Name, sym.Name, err)
			}
			patches = append(patches, p)
		}
	}
	return patches, nil
}
