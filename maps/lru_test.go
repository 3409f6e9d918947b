package maps

import (
	"errors"
	"testing"
	"unsafe"
)

func TestLRUEviction(t *testing.T) {
	tests := []struct {
		name string
		typ  Type
		d    *Domain
	}{
		{"lru_hash", LRUHash, nil},
		{"lru_hash domain", LRUHash, NewDomain(2)},
		{"lru_percpu_hash", LRUPerCPUHash, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 64
			m := newTestMap(t, Spec{Type: tt.typ, KeySize: 4, ValueSize: 8, MaxEntries: n}, Options{NumCPU: 2, Domain: tt.d})
			val := make([]byte, ValueSizeBytes(m.Spec(), 2))
			for k := range uint32(n) {
				if err := m.UpdateBytes(u32(k), val, UpdateNoExist); err != nil {
					t.Fatal(err)
				}
			}
			// Programs use a quarter of the keys, then n/2 new keys go in.
			hot := func(k uint32) bool { return k%4 == 0 }
			for k := range uint32(n) {
				if hot(k) && m.Lookup(unsafe.Pointer(&k), 0) == nil {
					t.Fatalf("key %d missing", k)
				}
			}
			for k := uint32(n); k < n+n/2; k++ {
				if err := m.UpdateBytes(u32(k), val, UpdateNoExist); err != nil {
					t.Fatalf("insert %d into a full LRU map: %v", k, err)
				}
				// Hot keys stay hot.
				for h := range uint32(n) {
					if hot(h) {
						m.Lookup(unsafe.Pointer(&h), 1)
					}
				}
			}
			h := m.(*hashMap)
			if c := h.len(); c != n {
				t.Errorf("count %d, want %d", c, n)
			}
			for k := range uint32(n) {
				err := m.LookupBytes(u32(k), val)
				if hot(k) && err != nil {
					t.Errorf("recently used key %d evicted", k)
				}
			}
			for k := uint32(n); k < n+n/2; k++ {
				if err := m.LookupBytes(u32(k), val); err != nil {
					t.Errorf("new key %d: %v", k, err)
				}
			}
			// Flags still apply to a full LRU map.
			if err := m.UpdateBytes(u32(n), val, UpdateNoExist); !errors.Is(err, ErrKeyExist) {
				t.Errorf("NOEXIST on an existing key: %v", err)
			}
			if err := m.UpdateBytes(u32(1000), val, UpdateExist); !errors.Is(err, ErrKeyNotExist) {
				t.Errorf("EXIST on a missing key: %v", err)
			}
			if c := h.len(); c != n {
				t.Errorf("count %d after failed updates, want %d", c, n)
			}
		})
	}
}

func TestLRUProgramInsert(t *testing.T) {
	// Programs insert into a full LRU map too, evicting.
	m := newTestMap(t, Spec{Type: LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 8}, Options{})
	for k := range uint32(100) {
		v := uint64(k)
		if err := m.Update(unsafe.Pointer(&k), unsafe.Pointer(&v), UpdateAny, 0); err != nil {
			t.Fatalf("insert %d: %v", k, err)
		}
		if p := m.Lookup(unsafe.Pointer(&k), 0); p == nil || *(*uint64)(p) != v {
			t.Fatalf("key %d just inserted: %v", k, p)
		}
	}
	if c := m.(*hashMap).len(); c != 8 {
		t.Errorf("count %d, want 8", c)
	}
}

func TestLRUNoCommonLRU(t *testing.T) {
	// As in the kernel, per-CPU LRU lists round max_entries to a multiple
	// of the CPU count.
	m := newTestMap(t, Spec{Type: LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 10, Flags: FlagNoCommonLRU}, Options{NumCPU: 4})
	if got := m.Spec().MaxEntries; got != 12 {
		t.Errorf("max_entries %d, want 12", got)
	}
}
