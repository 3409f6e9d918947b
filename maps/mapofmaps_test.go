package maps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestMapOfMapsTemplate(t *testing.T) {
	arr := Spec{Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	hash := Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	with := func(s Spec, f func(*Spec)) Spec { f(&s); return s }
	tests := []struct {
		name  string
		tmpl  Spec
		inner Spec
		err   error
	}{
		{"array same", arr, arr, nil},
		{"array other max_entries", arr, with(arr, func(s *Spec) { s.MaxEntries = 8 }), ErrInvalid},
		{"array inner_map flag", with(arr, func(s *Spec) { s.Flags = FlagInnerMap }), with(arr, func(s *Spec) { s.MaxEntries = 8; s.Flags = FlagInnerMap }), nil},
		{"array other value size", arr, with(arr, func(s *Spec) { s.ValueSize = 4 }), ErrInvalid},
		{"array other flags", arr, with(arr, func(s *Spec) { s.Flags = FlagRdonlyProg }), ErrInvalid},
		{"hash other max_entries", hash, with(hash, func(s *Spec) { s.MaxEntries = 8 }), nil},
		{"hash other key size", hash, with(hash, func(s *Spec) { s.KeySize = 8 }), ErrInvalid},
		{"other type", arr, with(arr, func(s *Spec) { s.Type = PerCPUArray }), ErrInvalid},
		{"hash for array", arr, hash, ErrInvalid},
	}
	for _, outer := range []Type{ArrayOfMaps, HashOfMaps} {
		for _, tt := range tests {
			t.Run(outer.String()+" "+tt.name, func(t *testing.T) {
				tmpl := tt.tmpl
				m := newTestMap(t, Spec{Name: "outer", Type: outer, KeySize: 4, ValueSize: 4, MaxEntries: 4, InnerMap: &tmpl}, Options{})
				in := newTestMap(t, tt.inner, Options{})
				err := m.UpdateBytes(u32(1), u32(IDOf(in)), UpdateAny)
				if sentinel(err) != tt.err {
					t.Fatalf("update: %v, want %v", err, tt.err)
				}
				// A failed update leaves the map unchanged.
				if err != nil {
					if err := m.LookupBytes(u32(1), make([]byte, 4)); !errors.Is(err, ErrKeyNotExist) {
						t.Errorf("lookup after failed update: %v", err)
					}
				}
			})
		}
	}
}

// A per-CPU inner map must have the outer map's number of CPUs: the
// programs using the outer map index the inner map's values by their
// runner's CPU number. Other inner maps do not depend on it.
func TestMapOfMapsNumCPU(t *testing.T) {
	for _, inner := range []Spec{
		{Type: PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: PerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: LRUPerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	} {
		for _, outer := range []Type{ArrayOfMaps, HashOfMaps} {
			for _, cpus := range [][2]int{{2, 2}, {2, 4}, {4, 2}, {1, 3}, {0, 1}} {
				t.Run(fmt.Sprintf("%s in %s cpus %v", inner.Type, outer, cpus), func(t *testing.T) {
					m := newTestMap(t, Spec{Name: "outer", Type: outer, KeySize: 4, ValueSize: 4, MaxEntries: 4, InnerMap: &inner}, Options{NumCPU: cpus[0]})
					in := newTestMap(t, inner, Options{NumCPU: cpus[1]})
					var want error
					if inner.Type.PerCPU() && max(cpus[0], 1) != cpus[1] {
						want = ErrInvalid
					}
					err := m.UpdateBytes(u32(1), u32(IDOf(in)), UpdateAny)
					if sentinel(err) != want {
						t.Fatalf("update: %v, want %v", err, want)
					}
					if want != nil {
						if !strings.Contains(err.Error(), "CPUs") {
							t.Errorf("error %q does not say why", err)
						}
						if m.Lookup(unsafe.Pointer(&[]uint32{1}[0]), 0) != nil {
							t.Error("a refused inner map was stored")
						}
					}
				})
			}
		}
	}
}

func TestMapOfMaps(t *testing.T) {
	inner := Spec{Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}
	for _, outer := range []Type{ArrayOfMaps, HashOfMaps} {
		t.Run(outer.String(), func(t *testing.T) {
			d := NewDomain(1)
			m := newTestMap(t, Spec{Name: "outer", Type: outer, KeySize: 4, ValueSize: 4, MaxEntries: 4, InnerMap: &inner}, Options{Domain: d})
			a := newTestMap(t, inner, Options{})
			b := newTestMap(t, inner, Options{})
			key := uint32(2)
			if m.Lookup(unsafe.Pointer(&key), 0) != nil {
				t.Fatal("lookup of an empty slot")
			}
			if err := m.UpdateBytes(u32(key), u32(IDOf(a)), UpdateAny); err != nil {
				t.Fatal(err)
			}
			// Programs get the inner map's handle, Go its id.
			p := m.Lookup(unsafe.Pointer(&key), 0)
			if uint64(uintptr(p)) != a.Handle() {
				t.Errorf("program lookup %p, want handle %#x", p, a.Handle())
			}
			if got, _ := FromHandle(uint64(uintptr(p)), true); got != a {
				t.Error("handle does not lead back to the inner map")
			}
			id := make([]byte, 4)
			if err := m.LookupBytes(u32(key), id); err != nil || binary.NativeEndian.Uint32(id) != IDOf(a) {
				t.Errorf("Go lookup: %v %v", id, err)
			}
			if err := m.UpdateBytes(u32(key), u32(0xffffff), UpdateAny); !errors.Is(err, ErrInvalid) {
				t.Errorf("update with an unknown id: %v", err)
			}
			if err := m.Update(unsafe.Pointer(&key), unsafe.Pointer(&key), 0, 0); !errors.Is(err, ErrNotSupported) {
				t.Errorf("program update: %v", err)
			}
			if err := m.LookupAndDelete(u32(key), id); !errors.Is(err, ErrNotSupported) {
				t.Errorf("lookup and delete: %v", err)
			}
			refs := func() *innerRefs {
				if outer == ArrayOfMaps {
					return &m.(*arrayOfMaps).refs
				}
				return &m.(*hashOfMaps).refs
			}()
			// Closed by its user, a stays alive through the outer map.
			// Replaced while a run may hold its handle, it leaves the
			// live-map table at once but keeps its memory until the run
			// ends.
			a.Close()
			if got, err := FromHandle(a.Handle(), true); got != a {
				t.Errorf("closed inner map held by the outer map: %v", err)
			}
			d.Enter(0)
			if err := m.UpdateBytes(u32(key), u32(IDOf(b)), UpdateAny); err != nil {
				t.Fatal(err)
			}
			if n := refs.count(); n != 1 {
				t.Errorf("%d inner maps referenced after the replacement, want 1", n)
			}
			if got, err := FromHandle(a.Handle(), true); got != a {
				t.Errorf("handle of a replaced inner map invalid during a run: %v", err)
			}
			if Reclaim() == 0 {
				t.Error("inner map freed while a run may hold its handle")
			}
			zero := uint32(0)
			if a.Lookup(unsafe.Pointer(&zero), 0) == nil {
				t.Error("inner map unusable during the run")
			}
			d.Exit(0)
			waitReclaimed(t)
			if got, _ := FromHandle(a.Handle(), true); got == a {
				t.Error("freed inner map still in the live-map table")
			}
			if err := m.Delete(unsafe.Pointer(&key)); err != nil {
				t.Fatal(err)
			}
			if err := m.Delete(unsafe.Pointer(&key)); !errors.Is(err, ErrKeyNotExist) {
				t.Errorf("second delete: %v", err)
			}
			if n := refs.count(); n != 0 {
				t.Errorf("%d inner maps referenced when empty", n)
			}
		})
	}
}

func TestArrayOfMapsErrors(t *testing.T) {
	inner := Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 2}
	m := newTestMap(t, Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: &inner}, Options{})
	in := newTestMap(t, inner, Options{})
	id := u32(IDOf(in))
	for name, tt := range map[string]struct {
		err, want error
	}{
		"index out of range":  {m.UpdateBytes(u32(2), id, UpdateAny), ErrFull},
		"NOEXIST":             {m.UpdateBytes(u32(0), id, UpdateNoExist), ErrInvalid},
		"lookup out of range": {m.LookupBytes(u32(2), make([]byte, 4)), ErrKeyNotExist},
		"delete out of range": {m.Delete(unsafe.Pointer(&[]uint32{5}[0])), ErrFull},
		"next key":            {m.NextKey(u32(1), make([]byte, 4)), ErrKeyNotExist},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", name, tt.err, tt.want)
		}
	}
}

// waitReclaimed waits for the frees deferred by Release to run.
func waitReclaimed(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for Reclaim() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("deferred frees still pending after 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
