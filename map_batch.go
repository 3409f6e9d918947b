package bpfvm

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
)

// MapBatchCursor keeps the position of a batch lookup across calls, as
// cilium/ebpf's does. Its zero value starts at the first key.
type MapBatchCursor struct {
	prev []byte
	done bool
}

// BatchOptions are accepted for cilium/ebpf compatibility: ElemFlags are
// the update flags of BatchUpdate.
type BatchOptions struct {
	ElemFlags uint64
	Flags     uint64
}

// batchSlice is a slice of keys or values: a slice of fixed-size elements,
// or a []byte holding elements back to back.
type batchSlice struct {
	v    reflect.Value
	raw  []byte
	size int
}

func newBatchSlice(s any, size int) (batchSlice, error) {
	if size == 0 {
		return batchSlice{}, fmt.Errorf("batch operation on a map without keys or values: %w", ErrNotSupported)
	}
	if b, ok := s.([]byte); ok {
		if len(b)%size != 0 {
			return batchSlice{}, fmt.Errorf("%d byte buffer for %d byte elements", len(b), size)
		}
		return batchSlice{raw: b, size: size}, nil
	}
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Slice {
		return batchSlice{}, fmt.Errorf("batch keys and values must be slices, not %T", s)
	}
	return batchSlice{v: v, size: size}, nil
}

func (s batchSlice) len() int {
	if s.raw != nil {
		return len(s.raw) / s.size
	}
	return s.v.Len()
}

func (s batchSlice) elem(i int) any {
	if s.raw != nil {
		return s.raw[i*s.size : (i+1)*s.size]
	}
	return s.v.Index(i).Addr().Interface()
}

// BatchLookup copies up to len(keysOut) elements, starting after the
// cursor's position, into keysOut and valuesOut and returns how many. At
// the end of the map it returns an error wrapping ErrKeyNotExist, possibly
// with a partial count, as cilium/ebpf does.
func (m *Map) BatchLookup(cursor *MapBatchCursor, keysOut, valuesOut any, opts *BatchOptions) (int, error) {
	return m.batchLookup(cursor, keysOut, valuesOut, false)
}

// BatchLookupAndDelete is BatchLookup that also deletes what it returns.
func (m *Map) BatchLookupAndDelete(cursor *MapBatchCursor, keysOut, valuesOut any, opts *BatchOptions) (int, error) {
	return m.batchLookup(cursor, keysOut, valuesOut, true)
}

func (m *Map) batchLookup(cursor *MapBatchCursor, keysOut, valuesOut any, del bool) (int, error) {
	if cursor == nil {
		return 0, fmt.Errorf("map %s: batch lookup: nil cursor", m.name)
	}
	a := accessRead
	if del {
		a |= accessWrite
	}
	if err := m.begin("batch lookup", a); err != nil {
		return 0, err
	}
	defer m.end(a)
	if !m.m.Spec().Type.Batch() {
		return 0, fmt.Errorf("map %s: batch lookup: %w", m.name, maps.ErrNotSupported)
	}
	vsize := maps.ValueSizeBytes(m.m.Spec(), m.ncpu)
	keys, err := newBatchSlice(keysOut, int(m.KeySize()))
	if err != nil {
		return 0, fmt.Errorf("map %s: batch lookup: %w", m.name, err)
	}
	values, err := newBatchSlice(valuesOut, int(m.ValueSize()))
	if err != nil {
		return 0, fmt.Errorf("map %s: batch lookup: %w", m.name, err)
	}
	if keys.len() != values.len() {
		return 0, fmt.Errorf("map %s: batch lookup: %d keys but %d values", m.name, keys.len(), values.len())
	}
	if del && !m.m.Spec().Type.BatchLookupAndDelete() {
		// The kernel's trie has the generic batch lookup, update and
		// delete, not lookup-and-delete.
		return 0, fmt.Errorf("map %s: batch lookup and delete: %w", m.name, maps.ErrNotSupported)
	}
	if cursor.done {
		return 0, fmt.Errorf("map %s: batch lookup: %w", m.name, maps.ErrKeyNotExist)
	}
	n := 0
	for n < keys.len() {
		next := make([]byte, m.KeySize())
		if err := m.m.NextKey(cursor.prev, next); err != nil {
			if errors.Is(err, maps.ErrKeyNotExist) {
				cursor.done = true
				return n, fmt.Errorf("map %s: batch lookup: %w", m.name, maps.ErrKeyNotExist)
			}
			return n, fmt.Errorf("map %s: batch lookup: %w", m.name, err)
		}
		v := make([]byte, vsize)
		if err := m.m.LookupBytes(next, v); err != nil {
			if errors.Is(err, maps.ErrKeyNotExist) {
				cursor.prev = next
				continue // deleted meanwhile
			}
			return n, fmt.Errorf("map %s: batch lookup: %w", m.name, err)
		}
		if err := unmarshal(next, keys.elem(n)); err != nil {
			return n, err
		}
		if err := m.decode(v, values.elem(n)); err != nil {
			return n, err
		}
		if del {
			if err := m.m.Delete(bytesPtr(next)); err != nil && !errors.Is(err, maps.ErrKeyNotExist) {
				return n, fmt.Errorf("map %s: batch lookup and delete: %w", m.name, err)
			}
			// Deleted keys cannot be the next NextKey position.
		} else {
			cursor.prev = next
		}
		n++
	}
	return n, nil
}

// BatchUpdate sets the values of many keys and returns how many it set.
func (m *Map) BatchUpdate(keys, values any, opts *BatchOptions) (int, error) {
	if err := m.begin("batch update", accessWrite); err != nil {
		return 0, err
	}
	defer m.end(accessWrite)
	if !m.m.Spec().Type.Batch() {
		return 0, fmt.Errorf("map %s: batch update: %w", m.name, maps.ErrNotSupported)
	}
	var flags MapUpdateFlags
	if opts != nil {
		flags = MapUpdateFlags(opts.ElemFlags)
	}
	ks, err := newBatchSlice(keys, int(m.KeySize()))
	if err != nil {
		return 0, fmt.Errorf("map %s: batch update: %w", m.name, err)
	}
	vs, err := newBatchSlice(values, int(m.ValueSize()))
	if err != nil {
		return 0, fmt.Errorf("map %s: batch update: %w", m.name, err)
	}
	if ks.len() != vs.len() {
		return 0, fmt.Errorf("map %s: batch update: %d keys but %d values", m.name, ks.len(), vs.len())
	}
	for i := 0; i < ks.len(); i++ {
		if err := m.Update(ks.elem(i), vs.elem(i), flags); err != nil {
			return i, err
		}
	}
	return ks.len(), nil
}

// BatchDelete deletes many keys and returns how many it deleted.
func (m *Map) BatchDelete(keys any, opts *BatchOptions) (int, error) {
	if err := m.begin("batch delete", accessWrite); err != nil {
		return 0, err
	}
	defer m.end(accessWrite)
	if !m.m.Spec().Type.Batch() {
		return 0, fmt.Errorf("map %s: batch delete: %w", m.name, maps.ErrNotSupported)
	}
	ks, err := newBatchSlice(keys, int(m.KeySize()))
	if err != nil {
		return 0, fmt.Errorf("map %s: batch delete: %w", m.name, err)
	}
	for i := 0; i < ks.len(); i++ {
		if err := m.Delete(ks.elem(i)); err != nil {
			return i, err
		}
	}
	return ks.len(), nil
}

// bytesPtr points at the first byte of a non-empty slice.
func bytesPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
