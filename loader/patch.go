package loader

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// patch replaces the bytes at off with data.
type patch struct {
	off  int64
	data []byte
}

// patchedReader reads through to an io.ReaderAt with some byte ranges
// replaced. It lets cilium/ebpf parse a fixed-up object without copying it.
type patchedReader struct {
	r       io.ReaderAt
	patches []patch
}

func (pr *patchedReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := pr.r.ReadAt(p, off)
	read := p[:n]
	for _, pt := range pr.patches {
		// Overlap of [off, off+n) and [pt.off, pt.off+len(pt.data)).
		lo := max(off, pt.off)
		hi := min(off+int64(n), pt.off+int64(len(pt.data)))
		if lo < hi {
			copy(read[lo-off:hi-off], pt.data[lo-pt.off:])
		}
	}
	return n, err
}

// setSymbolSize queues a patch giving symbol i (an index into
// elf.File.Symbols, which skips the null symbol) the st_size size.
// cilium/ebpf reads legacy map definitions using st_size, which is zero in
// objects from old compilers and hand-written assembly.
func (lm *legacyMaps) setSymbolSize(i int, size uint64) error {
	p, err := symbolSizePatch(lm.symtab, lm.class, lm.order, i, size)
	if err != nil {
		return err
	}
	lm.patches = append(lm.patches, p)
	return nil
}

// symbolSizePatch is the patch giving symbol i (an index into
// elf.File.Symbols) of the symbol table st the st_size size.
func symbolSizePatch(st *elf.Section, class elf.Class, order binary.ByteOrder, i int, size uint64) (patch, error) {
	if st == nil || st.Flags&elf.SHF_COMPRESSED != 0 {
		return patch{}, errors.New("cannot fix its symbol size: no uncompressed symbol table")
	}

	// Offset of st_size within an entry, and entry size, per ELF class.
	var field, entSize int64
	var raw []byte
	switch class {
	case elf.ELFCLASS64:
		field, entSize = 16, elf.Sym64Size
		raw = make([]byte, 8)
		order.PutUint64(raw, size)
	case elf.ELFCLASS32:
		field, entSize = 8, elf.Sym32Size
		raw = make([]byte, 4)
		order.PutUint32(raw, uint32(size))
	default:
		return patch{}, fmt.Errorf("cannot fix its symbol size: ELF class %v", class)
	}

	rel := (int64(i)+1)*entSize + field
	if rel < 0 || uint64(rel)+uint64(len(raw)) > st.Size || st.Offset > uint64(1<<62) {
		return patch{}, errors.New("cannot fix its symbol size: symbol outside the symbol table")
	}
	return patch{off: int64(st.Offset) + rel, data: raw}, nil
}
