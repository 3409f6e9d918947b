package maps

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"
)

// kv is the Go-side face of a map that scripts drive: ours, or a kernel map
// in the differential tests.
type kv interface {
	update(key, value []byte, flags uint64) error
	lookup(key []byte) ([]byte, error)
	delete(key []byte) error
	lookupAndDelete(key []byte) ([]byte, error)
	nextKey(key []byte) ([]byte, error)
}

// ours adapts a Map to kv.
type ours struct {
	m    Map
	ncpu int
}

func (o ours) valueSize() int { return ValueSizeBytes(o.m.Spec(), o.ncpu) }

func (o ours) update(key, value []byte, flags uint64) error {
	return o.m.UpdateBytes(key, value, flags)
}

func (o ours) lookup(key []byte) ([]byte, error) {
	v := make([]byte, o.valueSize())
	if err := o.m.LookupBytes(key, v); err != nil {
		return nil, err
	}
	return v, nil
}

func (o ours) delete(key []byte) error {
	if len(key) == 0 {
		return o.m.Delete(nil)
	}
	return o.m.Delete(unsafe.Pointer(&key[0]))
}

func (o ours) lookupAndDelete(key []byte) ([]byte, error) {
	v := make([]byte, o.valueSize())
	if err := o.m.LookupAndDelete(key, v); err != nil {
		return nil, err
	}
	return v, nil
}

func (o ours) nextKey(key []byte) ([]byte, error) {
	next := make([]byte, o.m.Spec().KeySize)
	if err := o.m.NextKey(key, next); err != nil {
		return nil, err
	}
	return next, nil
}

// Operations of a script.
const (
	opUpdate = iota
	opLookup
	opDelete
	opLookupAndDelete
	opKeys // walk NextKey from nil; the result is the sorted key set
	opNextKey
)

// step is one operation of a script. Keys and values are small integers that
// the script's shape turns into bytes (val builds a whole Go-side value,
// every per-CPU value included); want is the expected value (-1: none) and
// err the expected sentinel. keys lists the expected key set of opKeys.
type step struct {
	op    int
	key   int
	val   int
	flags uint64
	want  int
	err   error
	keys  []int
}

// shape turns script integers into keys and values.
type shape struct {
	keySize, valueSize int
	ncpu               int  // per-CPU values (0: not per-CPU)
	noKey              bool // queue and stack: no keys
}

func (s shape) key(k int) []byte {
	if s.noKey {
		return nil
	}
	b := make([]byte, s.keySize)
	for i := range b {
		b[i] = byte(k >> (8 * (i % 4)))
	}
	return b
}

func (s shape) keyInt(b []byte) int {
	var v int
	for i := 0; i < min(4, len(b)); i++ {
		v |= int(b[i]) << (8 * i)
	}
	return v
}

// value: every byte of CPU c's value is val+c; padding is zero.
func (s shape) value(val int) []byte {
	if s.ncpu == 0 {
		return bytes.Repeat([]byte{byte(val)}, s.valueSize)
	}
	stride := (s.valueSize + 7) &^ 7
	b := make([]byte, stride*s.ncpu)
	for c := range s.ncpu {
		copy(b[c*stride:], bytes.Repeat([]byte{byte(val + c)}, s.valueSize))
	}
	return b
}

// sentinel reduces an error to the sentinel it wraps, for comparison.
func sentinel(err error) error {
	for _, s := range []error{ErrKeyNotExist, ErrKeyExist, ErrFull, ErrNoSpace, ErrInvalid, ErrNotSupported, ErrBusy, ErrAgain, ErrBadFD} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// result is what one step did, comparable across implementations.
type result struct {
	err   error
	value []byte
	keys  []int
}

func (r result) String() string {
	return fmt.Sprintf("err=%v value=%x keys=%v", r.err, r.value, r.keys)
}

func (r result) equal(o result) bool {
	return r.err == o.err && bytes.Equal(r.value, o.value) && slices.Equal(r.keys, o.keys)
}

func (s shape) run(m kv, st step) result {
	k := s.key(st.key)
	switch st.op {
	case opUpdate:
		return result{err: sentinel(m.update(k, s.value(st.val), st.flags))}
	case opLookup:
		v, err := m.lookup(k)
		return result{err: sentinel(err), value: v}
	case opDelete:
		return result{err: sentinel(m.delete(k))}
	case opLookupAndDelete:
		v, err := m.lookupAndDelete(k)
		return result{err: sentinel(err), value: v}
	case opNextKey:
		n, err := m.nextKey(k)
		if err != nil {
			return result{err: sentinel(err)}
		}
		return result{keys: []int{s.keyInt(n)}}
	case opKeys:
		var keys []int
		var prev []byte
		for range 10000 {
			n, err := m.nextKey(prev)
			if err != nil {
				if !errors.Is(err, ErrKeyNotExist) {
					return result{err: sentinel(err)}
				}
				break
			}
			keys = append(keys, s.keyInt(n))
			prev = n
		}
		slices.Sort(keys)
		return result{keys: keys}
	}
	panic("bad op")
}

// expected is the result a step's want, err and keys describe.
func (s shape) expected(st step) result {
	r := result{err: st.err}
	if st.want >= 0 && (st.op == opLookup || st.op == opLookupAndDelete) && st.err == nil {
		r.value = s.value(st.want)
	}
	if st.op == opKeys || st.op == opNextKey {
		r.keys = st.keys
		if r.keys == nil && st.op == opKeys {
			r.keys = nil
		}
	}
	return r
}

// check runs a script on m and compares each step with its expectation.
func (s shape) check(t *testing.T, m kv, script []step) {
	t.Helper()
	for i, st := range script {
		got, want := s.run(m, st), s.expected(st)
		if !got.equal(want) {
			t.Errorf("step %d (op %d key %d val %d flags %d): got %v, want %v", i, st.op, st.key, st.val, st.flags, got, want)
		}
	}
}

// Shorthands for scripts.
func upd(key, val int, flags uint64, err error) step {
	return step{op: opUpdate, key: key, val: val, flags: flags, want: -1, err: err}
}
func get(key, want int, err error) step { return step{op: opLookup, key: key, want: want, err: err} }
func del(key int, err error) step       { return step{op: opDelete, key: key, want: -1, err: err} }
func pop(key, want int, err error) step {
	return step{op: opLookupAndDelete, key: key, want: want, err: err}
}
func keys(k ...int) step { return step{op: opKeys, want: -1, keys: k} }
func next(key int, want int, err error) step {
	st := step{op: opNextKey, key: key, want: -1, err: err}
	if err == nil {
		st.keys = []int{want}
	}
	return st
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
