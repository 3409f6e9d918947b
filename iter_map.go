package bpfvm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// Map iterators: iter/bpf_map over maps, iter/bpf_map_elem over one map's
// elements (kernel/bpf/map_iter.c, the maps' seq_info).

// mapLayout is where struct bpf_map holds what a map's image shows, by
// the target BTF; a member the BTF lacks is left out (off -1).
type mapLayout struct {
	size                                   uint32
	id, name, typ, flags, key, value, maxE int
}

func mapLayoutOf(spec *btf.Spec) (*mapLayout, error) {
	if spec == nil {
		return nil, fmt.Errorf("no kernel BTF for bpf_map images")
	}
	var m *btf.Struct
	if err := spec.TypeByName("bpf_map", &m); err != nil {
		return nil, fmt.Errorf("bpf_map images: %w", err)
	}
	l := &mapLayout{size: m.Size}
	for _, f := range []struct {
		name string
		off  *int
	}{{"id", &l.id}, {"name", &l.name}, {"map_type", &l.typ}, {"map_flags", &l.flags}, {"key_size", &l.key}, {"value_size", &l.value}, {"max_entries", &l.maxE}} {
		*f.off = -1
		if off, ok := memberOffset(m.Members, f.name); ok {
			*f.off = int(off)
		}
	}
	if l.size > progtype.IterContextSize/4 {
		return nil, fmt.Errorf("bpf_map of %d bytes does not fit an iterator's context", l.size)
	}
	return l, nil
}

// fill writes the image of m into b.
func (l *mapLayout) fill(b []byte, m *Map) {
	put := func(off int, v uint32) {
		if off >= 0 {
			binary.NativeEndian.PutUint32(b[off:], v)
		}
	}
	put(l.id, m.ID())
	put(l.typ, uint32(m.Type()))
	put(l.flags, m.Flags())
	put(l.key, m.KeySize())
	put(l.value, m.ValueSize())
	put(l.maxE, m.MaxEntries())
	if l.name >= 0 {
		name := b[l.name : l.name+16]
		copy(name[:15], m.Name())
	}
}

// mapListElems are iter/bpf_map's elements: each map's image.
func mapListElems(kt *btf.Spec, ms []*Map) ([]iterElem, error) {
	layout, err := mapLayoutOf(kt)
	if err != nil {
		return nil, err
	}
	elems := make([]iterElem, len(ms))
	for i, m := range ms {
		elems[i].fill = func(ctx []byte, image uint32) error {
			layout.fill(ctx[image:], m)
			binary.NativeEndian.PutUint64(ctx[8:], progtype.IterPointer(image))
			return nil
		}
	}
	return elems, nil
}

// iterableMap reports whether iter/bpf_map_elem walks maps of type t
// (those whose kernel ops have iter_seq_info).
func iterableMap(t ebpf.MapType) bool {
	switch t {
	case ebpf.Array, ebpf.PerCPUArray, ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash:
		return true
	}
	return false
}

// mapElems are iter/bpf_map_elem's elements over m: the map's image, the
// key and the value (every CPU's for a per-CPU map) after it, and the
// value written back when a run changed it; the last run sees the map
// and NULL buffers. The attach's checks come first (bpf_iter_attach_map).
func (p *Program) mapElems(kt *btf.Spec, m *Map) ([]iterElem, iterElem, error) {
	if m == nil {
		return nil, iterElem{}, fmt.Errorf("iter/bpf_map_elem needs IterOptions.Map: %w", syscall.EBADF)
	}
	if !iterableMap(m.Type()) {
		return nil, iterElem{}, fmt.Errorf("iter/bpf_map_elem over a %s map: %w", m.Type(), syscall.EINVAL)
	}
	valueAcc := m.ValueSize()
	if m.perCPU() {
		valueAcc = uint32(maps.ValueSizeBytes(m.m.Spec(), m.ncpu))
	}
	if p.run.MaxRdonly > m.KeySize() || p.run.MaxRdwr > valueAcc {
		return nil, iterElem{}, fmt.Errorf("iter/bpf_map_elem: the program reads %d bytes of keys of %d, %d of values of %d: %w",
			p.run.MaxRdonly, m.KeySize(), p.run.MaxRdwr, valueAcc, syscall.EACCES)
	}
	layout, err := mapLayoutOf(kt)
	if err != nil {
		return nil, iterElem{}, err
	}
	keyOff := (layout.size + 7) &^ 7
	valueOff := keyOff + (m.KeySize()+7)&^7
	if valueOff+valueAcc > progtype.IterContextSize-progtype.IterArea-iterMetaSize-iterSeqSize {
		return nil, iterElem{}, fmt.Errorf("iter/bpf_map_elem: a key of %d bytes and a value of %d do not fit an iterator's context", m.KeySize(), valueAcc)
	}
	var keys [][]byte
	var key any // nil: the first key
	for {
		next, err := m.NextKeyBytes(key)
		if err != nil {
			return nil, iterElem{}, err
		}
		if next == nil {
			break
		}
		keys = append(keys, next)
		key = next
	}
	mapOnly := func(ctx []byte, image uint32) {
		layout.fill(ctx[image:], m)
		binary.NativeEndian.PutUint64(ctx[8:], progtype.IterPointer(image))
	}
	elems := make([]iterElem, 0, len(keys))
	for _, k := range keys {
		var before []byte
		elems = append(elems, iterElem{
			fill: func(ctx []byte, image uint32) error {
				v, err := m.lookupBytes(k)
				if err != nil {
					return err
				}
				before = v
				mapOnly(ctx, image)
				copy(ctx[image+keyOff:], k)
				copy(ctx[image+valueOff:], v)
				binary.NativeEndian.PutUint64(ctx[16:], progtype.IterPointer(image+keyOff))
				binary.NativeEndian.PutUint64(ctx[24:], progtype.IterPointer(image+valueOff))
				return nil
			},
			done: func(ctx []byte, image uint32) error {
				after := ctx[image+valueOff : image+valueOff+uint32(len(before))]
				if bytes.Equal(after, before) {
					return nil
				}
				return m.updateBytes(k, after)
			},
		})
	}
	last := iterElem{fill: func(ctx []byte, image uint32) error { mapOnly(ctx, image); return nil }}
	return elems, last, nil
}

// updateBytes sets key's value to v, raw bytes (every CPU's for a per-CPU
// map, each padded to 8 bytes).
func (m *Map) updateBytes(key, v []byte) error {
	if err := m.begin("update", accessWrite); err != nil {
		return err
	}
	defer m.end(accessWrite)
	if err := m.m.UpdateBytes(key, v, uint64(UpdateExist)); err != nil {
		return fmt.Errorf("map %s: update: %w", m.name, err)
	}
	return nil
}
