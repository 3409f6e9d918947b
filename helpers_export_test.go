package bpfvm

import (
	"context"
	"fmt"

	"github.com/bpfvm/bpfvm/maps"
)

// RingRecords drains the committed records of a ring buffer map, for tests
// in package bpfvm_test.
func RingRecords(m *Map) ([][]byte, error) {
	rb, ok := m.m.(*maps.RingBuffer)
	if !ok {
		return nil, fmt.Errorf("map %s is not a ring buffer", m.name)
	}
	rd := rb.NewReader()
	defer rd.Close()
	// A done context makes the reader return what is there without waiting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var recs [][]byte
	for {
		rec, err := rd.ReadContext(ctx)
		if err != nil {
			return recs, nil
		}
		recs = append(recs, rec)
	}
}
