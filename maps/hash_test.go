package maps

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"
)

func newTestMap(t testing.TB, spec Spec, opts Options) Map {
	t.Helper()
	m, err := New(spec, opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", spec, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// hashScript exercises flags, errors and capacity of a hash map of 4
// entries. full is the error of inserting a fifth key.
func hashScript(full error) []step {
	s := []step{
		get(1, -1, ErrKeyNotExist),
		upd(1, 10, UpdateExist, ErrKeyNotExist),
		get(1, -1, ErrKeyNotExist),
		upd(1, 10, UpdateNoExist, nil),
		upd(1, 11, UpdateNoExist, ErrKeyExist),
		get(1, 10, nil),
		upd(1, 12, UpdateExist, nil),
		get(1, 12, nil),
		upd(1, 13, UpdateAny, nil),
		get(1, 13, nil),
		upd(1, 14, 3, ErrInvalid),
		upd(1, 14, UpdateLock, ErrInvalid),
		upd(1, 14, UpdateLock|UpdateExist, ErrInvalid),
		get(1, 13, nil),
		del(2, ErrKeyNotExist),
		upd(2, 20, UpdateAny, nil),
		upd(3, 30, UpdateAny, nil),
		upd(4, 40, UpdateNoExist, nil),
		keys(1, 2, 3, 4),
	}
	if full != nil {
		s = append(s,
			upd(5, 50, UpdateAny, full),
			upd(5, 50, UpdateNoExist, full),
			upd(5, 50, UpdateExist, ErrKeyNotExist),
			get(5, -1, ErrKeyNotExist),
			keys(1, 2, 3, 4),
		)
	}
	return append(s,
		upd(4, 41, UpdateAny, nil), // replacing works when full
		upd(4, 42, UpdateExist, nil),
		get(4, 42, nil),
		pop(2, 20, nil),
		pop(2, -1, ErrKeyNotExist),
		get(2, -1, ErrKeyNotExist),
		del(3, nil),
		del(3, ErrKeyNotExist),
		keys(1, 4),
		upd(5, 50, UpdateAny, nil),
		upd(6, 60, UpdateNoExist, nil),
		keys(1, 4, 5, 6),
		del(1, nil), del(4, nil), del(5, nil), del(6, nil),
		keys(),
	)
}

func TestHashSemantics(t *testing.T) {
	tests := []struct {
		name  string
		typ   Type
		key   uint32
		value uint32
		full  error
	}{
		{"hash", Hash, 4, 8, ErrFull},
		{"hash odd sizes", Hash, 3, 5, ErrFull},
		{"hash long key", Hash, 37, 16, ErrFull},
		{"percpu_hash", PerCPUHash, 4, 4, ErrFull},
		{"percpu_hash 12", PerCPUHash, 8, 12, ErrFull},
		{"lru_hash", LRUHash, 4, 8, nil},
		{"lru_percpu_hash", LRUPerCPUHash, 4, 4, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const ncpu = 3
			spec := Spec{Name: "t", Type: tt.typ, KeySize: tt.key, ValueSize: tt.value, MaxEntries: 4}
			m := newTestMap(t, spec, Options{NumCPU: ncpu})
			sh := shape{keySize: int(tt.key), valueSize: int(tt.value)}
			if tt.typ.PerCPU() {
				sh.ncpu = ncpu
			}
			sh.check(t, ours{m, ncpu}, hashScript(tt.full))
			if n := m.(*hashMap).len(); n != 0 {
				t.Errorf("count %d after deleting everything", n)
			}
		})
	}
}

func TestHashGoErrors(t *testing.T) {
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4}, Options{})
	tests := []struct {
		name string
		err  error
	}{
		{"short key", m.UpdateBytes([]byte{1}, make([]byte, 8), 0)},
		{"short value", m.UpdateBytes(u32(1), make([]byte, 4), 0)},
		{"lookup short key", m.LookupBytes([]byte{1, 2}, make([]byte, 8))},
		{"lookup long value", m.LookupBytes(u32(1), make([]byte, 9))},
		{"next key short", m.NextKey(nil, make([]byte, 3))},
		{"lookup and delete short", m.LookupAndDelete(u32(1), make([]byte, 7))},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tt.name, tt.err)
		}
	}
}

func TestHashNextKey(t *testing.T) {
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 64, Flags: FlagZeroSeed}, Options{})
	want := map[uint32]bool{}
	for i := range uint32(50) {
		if err := m.UpdateBytes(u32(i*7919), u32(i), 0); err != nil {
			t.Fatal(err)
		}
		want[i*7919] = true
	}
	next := make([]byte, 4)
	first := make([]byte, 4)
	if err := m.NextKey(nil, first); err != nil {
		t.Fatal(err)
	}
	// A missing key restarts at the first key, as in the kernel.
	if err := m.NextKey(u32(12345), next); err != nil || !bytes.Equal(next, first) {
		t.Errorf("next of a missing key: %x, %v, want first key %x", next, err, first)
	}
	// The walk visits every key once, in bucket then chain order.
	h := m.(*hashMap)
	seen := map[uint32]bool{}
	lastBucket := uint32(0)
	var prev []byte
	for {
		err := m.NextKey(prev, next)
		if errors.Is(err, ErrKeyNotExist) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		k := *(*uint32)(unsafe.Pointer(&next[0]))
		if seen[k] {
			t.Fatalf("key %d twice", k)
		}
		seen[k] = true
		b := HashKey(h.seed, next) & h.mask
		if b < lastBucket {
			t.Errorf("key %d in bucket %d after bucket %d", k, b, lastBucket)
		}
		lastBucket = b
		prev = append(prev[:0], next...)
	}
	if len(seen) != len(want) {
		t.Errorf("walk saw %d keys, want %d", len(seen), len(want))
	}
	// After the last key: ErrKeyNotExist.
	if err := m.NextKey(prev, next); !errors.Is(err, ErrKeyNotExist) {
		t.Errorf("next of the last key: %v", err)
	}
}

func TestHashProgramSide(t *testing.T) {
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 2}, Options{NumCPU: 2})
	key, val := uint32(7), uint64(0x1122334455667788)
	if p := m.Lookup(unsafe.Pointer(&key), 0); p != nil {
		t.Fatal("lookup of a missing key")
	}
	if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateNoExist, 1); err != nil {
		t.Fatal(err)
	}
	p := m.Lookup(unsafe.Pointer(&key), 0)
	if p == nil || *(*uint64)(p) != val {
		t.Fatalf("lookup: %v", p)
	}
	// Programs write through the pointer; Go sees it.
	*(*uint64)(p) = 42
	got := make([]byte, 8)
	if err := m.LookupBytes(u32(key), got); err != nil || *(*uint64)(unsafe.Pointer(&got[0])) != 42 {
		t.Errorf("Go lookup after program write: %x %v", got, err)
	}
	if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateNoExist, 0); !errors.Is(err, ErrKeyExist) {
		t.Errorf("NOEXIST on existing: %v", err)
	}
	if err := m.Delete(unsafe.Pointer(&key)); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(unsafe.Pointer(&key)); !errors.Is(err, ErrKeyNotExist) {
		t.Errorf("delete of a missing key: %v", err)
	}
	// The pointer is in the map's memory.
	in := false
	for _, r := range m.Memory() {
		if a := uint64(uintptr(p)); a >= r.Start && a+8 <= r.End && r.Writable {
			in = true
		}
	}
	if !in {
		t.Errorf("value %p not in Memory() %v", p, m.Memory())
	}
}

func TestPerCPUHashLayout(t *testing.T) {
	const ncpu = 3
	for _, typ := range []Type{PerCPUHash, LRUPerCPUHash} {
		m := newTestMap(t, Spec{Type: typ, KeySize: 4, ValueSize: 4, MaxEntries: 8}, Options{NumCPU: ncpu})
		if n := ValueSizeBytes(m.Spec(), ncpu); n != 24 {
			t.Fatalf("value size %d, want 3 CPUs x 8", n)
		}
		key := uint32(1)
		v := uint32(0xaabbccdd)
		// A new key from a program: other CPUs' values are zero.
		if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&v), UpdateAny, 1); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 24)
		if err := m.LookupBytes(u32(key), got); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, 24)
		copy(want[8:], u32(v))
		if !bytes.Equal(got, want) {
			t.Errorf("%s after program update on CPU 1: %x, want %x", typ, got, want)
		}
		// Go sets every CPU; a program update writes only its CPU's.
		all := []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}
		if err := m.UpdateBytes(u32(key), all, UpdateExist); err != nil {
			t.Fatal(err)
		}
		v = 9
		if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&v), UpdateExist, 2); err != nil {
			t.Fatal(err)
		}
		m.LookupBytes(u32(key), got)
		want = []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0}
		if !bytes.Equal(got, want) {
			t.Errorf("%s after program update on CPU 2: %x, want %x", typ, got, want)
		}
		for cpu := range ncpu {
			p := m.Lookup(unsafe.Pointer(&key), cpu)
			if p == nil || *(*uint32)(p) != uint32(want[cpu*8]) {
				t.Errorf("%s: program lookup on CPU %d: %v", typ, cpu, p)
			}
		}
	}
}

func TestHashFunction(t *testing.T) {
	// Keys differing only in their high bytes spread over low bits.
	buckets := map[uint32]int{}
	for i := range 256 {
		buckets[HashKey(0, []byte{10, 0, 0, byte(i)})&63]++
	}
	if len(buckets) < 48 {
		t.Errorf("256 keys fill only %d of 64 buckets", len(buckets))
	}
	// Every key length takes the tail path correctly: keys that differ in
	// their last byte hash differently, and trailing zero bytes count.
	for n := 1; n <= 24; n++ {
		a := make([]byte, n)
		b := make([]byte, n)
		b[n-1] = 1
		if HashKey(1, a) == HashKey(1, b) {
			t.Errorf("length %d: last byte ignored", n)
		}
		if HashKey(1, a) == HashKey(1, a[:n-1]) {
			t.Errorf("length %d: same hash as length %d", n, n-1)
		}
	}
	if HashKey(1, []byte{1, 2, 3}) == HashKey(2, []byte{1, 2, 3}) {
		t.Error("seed ignored")
	}
}

func TestHashCapacityAndReuse(t *testing.T) {
	// Many more updates than elements: retired elements are reused.
	d := NewDomain(1)
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16}, Options{Domain: d})
	for i := range 10000 {
		k := uint32(i % 16)
		if err := m.UpdateBytes(u32(k), make([]byte, 8), UpdateAny); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if i%3 == 0 {
			if err := m.UpdateBytes(u32(k+100), make([]byte, 8), UpdateAny); !errors.Is(err, ErrFull) && err != nil {
				t.Fatal(err)
			}
			m.Delete(unsafe.Pointer(&k))
		}
	}
	h := m.(*hashMap)
	if used := h.elems.fresh.Load(); used > h.elems.n {
		t.Errorf("%d elements used of %d", used, h.elems.n)
	}
}

func TestHashProgramUpdateBusy(t *testing.T) {
	// A second runner inside a run keeps every element retired after it
	// entered; once the pool is exhausted program updates fail with
	// ErrBusy rather than wait for it, and succeed again after its run.
	d := NewDomain(2)
	defer d.Close()
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1}, Options{Domain: d})
	key, val := uint32(1), uint64(0)
	d.Enter(0)
	d.Enter(1)
	var err error
	for i := range 1000 {
		if err = m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateAny, 0); err != nil {
			if i < 64 {
				t.Errorf("busy after %d updates", i)
			}
			break
		}
	}
	if !errors.Is(err, ErrBusy) {
		t.Errorf("update with every element retired: %v, want ErrBusy", err)
	}
	d.Exit(1)
	if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateAny, 0); err != nil {
		t.Errorf("update after the other run: %v", err)
	}
	d.Exit(0)
}

func TestHashProgramReuseSole(t *testing.T) {
	// The only run inside reuses what it retired at once (Domain.Sole), as
	// the kernel's free lists do: its updates never run out of elements,
	// and a value it still points at is the map's memory, now another
	// element's.
	d := NewDomain(1)
	defer d.Close()
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1}, Options{Domain: d})
	h := m.(*hashMap)
	key, val := uint32(1), uint64(0)
	d.Enter(0)
	defer d.Exit(0)
	if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateAny, 0); err != nil {
		t.Fatal(err)
	}
	held := uint64(uintptr(m.Lookup(unsafe.Pointer(&key), 0)))
	start, end := h.vbase, h.vbase+uint64(h.elems.n)*h.vsize
	for i := range 10000 {
		val++
		if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateAny, 0); err != nil {
			t.Fatalf("update %d of the sole run: %v", i, err)
		}
	}
	if held < start || held >= end {
		t.Errorf("held value %#x outside the value block [%#x, %#x)", held, start, end)
	}
	if used := h.elems.fresh.Load(); used > h.elems.n {
		t.Errorf("%d elements used of %d", used, h.elems.n)
	}
}

func TestHashReuseWaitsForEveryDomain(t *testing.T) {
	// A run of any collection may hold an element (the map is its inner
	// map, or a checked-mode handle): retired elements wait for runs of
	// every domain, whichever domain the map was created with.
	own := NewDomain(1)
	defer own.Close()
	other := NewDomain(1)
	defer other.Close()
	for _, tt := range []struct {
		name   string
		domain *Domain // the map's
		run    *Domain // where the run is
	}{
		{"own domain", own, own},
		{"other domain", own, other},
		{"map without a domain", nil, other},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1}, Options{Domain: tt.domain})
			key, val := uint32(1), uint64(0)
			if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateAny, 0); err != nil {
				t.Fatal(err)
			}
			// The run holding the element is not the one updating
			// (a sole run may reuse what it holds itself).
			updater := NewDomain(1)
			defer updater.Close()
			updater.Enter(0)
			defer updater.Exit(0)
			tt.run.Enter(0)
			held := m.Lookup(unsafe.Pointer(&key), 0)
			var err error
			for range 1000 {
				val++
				if err = m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateAny, 0); err != nil {
					break
				}
				if got := *(*uint64)(held); got != 0 {
					t.Fatalf("element held by a run reused: value %d", got)
				}
			}
			if !errors.Is(err, ErrBusy) {
				t.Errorf("update with every element retired: %v, want ErrBusy", err)
			}
			tt.run.Exit(0)
			if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&val), UpdateAny, 0); err != nil {
				t.Errorf("update after the run: %v", err)
			}
		})
	}
}
