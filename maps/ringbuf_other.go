//go:build !linux

package maps

// doubleMap leaves the 2*size bytes at addr as they are where there is no
// memfd: a sample that wraps past the end of the data is written and read
// contiguously in the second half, as every access to the data goes from
// data + pos&mask onwards (DESIGN.md, "Ring buffers without memfd").
func doubleMap(addr, size uint64) error { return nil }
