package maps

import "github.com/bpfvm/bpfvm/vm"

// HeaderFieldBytes is the size of the type-specific header fields at
// HeaderFields.
const HeaderFieldBytes = headerSize - HeaderFields

// InternalRegions returns the read-only memory of m that the rewrite's
// inlined lookups (package rewrite) read besides the values: the
// type-specific header fields and, by type, the slots of an array of maps,
// the bucket heads of the hash family and the elements of a hash of maps
// (whose values, inner map handles, Memory leaves out). Checked runs of
// verified programs grant these regions so that inlined lookups run under
// the checks too.
func InternalRegions(m Map) []vm.Region {
	var h *header
	var rs []vm.Region
	switch m := m.(type) {
	case *array:
		h = &m.header
	case *arrayOfMaps:
		h = &m.header
		rs = append(rs, vm.Region{Start: m.base, End: m.base + 8*uint64(m.spec.MaxEntries)})
	case *hashMap:
		h = &m.header
		rs = append(rs, m.bucketRegion())
	case *hashOfMaps:
		h = &m.header
		start, end := m.elems.region()
		rs = append(rs, m.bucketRegion(), vm.Region{Start: start, End: end})
	default:
		return nil
	}
	fields := h.Handle() + HeaderFields
	return append(rs, vm.Region{Start: fields, End: h.Handle() + headerSize})
}

// bucketRegion is the read-only region of the bucket heads.
func (m *hashMap) bucketRegion() vm.Region {
	return vm.Region{Start: m.buckets, End: m.buckets + 8*(uint64(m.mask)+1)}
}
