package bpfvm

import (
	"fmt"

	"github.com/bpfvm/bpfvm/maps"
)

// NewRingReader returns a reader of a ring buffer map, for tests in package
// bpfvm_test.
func NewRingReader(m *Map) (*maps.RingReader, error) {
	rb, ok := m.m.(*maps.RingBuffer)
	if !ok {
		return nil, fmt.Errorf("map %s is not a ring buffer", m.name)
	}
	return rb.NewReader(), nil
}
