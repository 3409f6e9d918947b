package maps

import (
	"errors"
	"testing"
	"unsafe"
)

func progArrayScript() []step {
	return []step{
		get(0, -1, ErrKeyNotExist),
		get(4, -1, ErrKeyNotExist),
		upd(0, 0, UpdateAny, nil), // id 0 is a program like any other
		get(0, 0, nil),
		upd(1, 1, UpdateAny, nil),
		upd(1, 2, UpdateNoExist, ErrInvalid),
		upd(1, 2, UpdateExist, ErrInvalid),
		upd(4, 2, UpdateAny, ErrFull),
		get(1, 1, nil),
		del(2, ErrKeyNotExist),
		del(4, ErrFull),
		del(0, nil),
		get(0, -1, ErrKeyNotExist),
		pop(1, -1, ErrNotSupported),
		next(0, 1, nil),
		next(3, -1, ErrKeyNotExist),
		next(9, 0, nil),
	}
}

func TestProgArray(t *testing.T) {
	m := newTestMap(t, Spec{Type: ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}, Options{})
	sh := shape{keySize: 4, valueSize: 4}
	sh.check(t, ours{m, 1}, progArrayScript())

	p := m.(*ProgramArray)
	if err := m.UpdateBytes(u32(3), u32(0xdeadbeef), 0); err != nil {
		t.Fatal(err)
	}
	if id, ok := p.Get(3); !ok || id != 0xdeadbeef {
		t.Errorf("Get(3) = %#x, %v", id, ok)
	}
	if _, ok := p.Get(2); ok {
		t.Error("Get of an empty slot")
	}
	if _, ok := p.Get(100); ok {
		t.Error("Get out of range")
	}
	k := uint32(1)
	if m.Lookup(unsafe.Pointer(&k), 0) != nil {
		t.Error("program lookup in a prog_array")
	}
	if err := m.Update(unsafe.Pointer(&k), unsafe.Pointer(&k), 0, 0); !errors.Is(err, ErrNotSupported) {
		t.Errorf("program update: %v", err)
	}
}

// fakePrograms counts references per program id; ids above 100 are not
// live programs.
type fakePrograms map[uint32]int

func (f fakePrograms) Acquire(id uint32) bool {
	if id > 100 {
		return false
	}
	f[id]++
	return true
}

func (f fakePrograms) Release(id uint32) { f[id]-- }

func TestProgArrayHoldsPrograms(t *testing.T) {
	// Each slot holds a reference to its program; replacing, deleting,
	// closing (which empties the array, as the kernel's last user
	// reference does) and freeing drop it.
	for _, end := range []string{"close", "close while held"} {
		t.Run(end, func(t *testing.T) {
			progs := fakePrograms{}
			m, err := New(Spec{Type: ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}, Options{Programs: progs})
			if err != nil {
				t.Fatal(err)
			}
			steps := []struct {
				name string
				do   func() error
				err  error
				want fakePrograms
			}{
				{"store 1", func() error { return m.UpdateBytes(u32(0), u32(1), UpdateAny) }, nil, fakePrograms{1: 1}},
				{"store 1 again", func() error { return m.UpdateBytes(u32(1), u32(1), UpdateAny) }, nil, fakePrograms{1: 2}},
				{"replace by 2", func() error { return m.UpdateBytes(u32(0), u32(2), UpdateAny) }, nil, fakePrograms{1: 1, 2: 1}},
				{"no such program", func() error { return m.UpdateBytes(u32(2), u32(200), UpdateAny) }, ErrInvalid, fakePrograms{1: 1, 2: 1}},
				{"delete", func() error { return m.Delete(unsafe.Pointer(&[]uint32{1}[0])) }, nil, fakePrograms{1: 0, 2: 1}},
			}
			for _, s := range steps {
				if err := s.do(); !errors.Is(err, s.err) && err != s.err {
					t.Fatalf("%s: %v, want %v", s.name, err, s.err)
				}
				for id, n := range s.want {
					if progs[id] != n {
						t.Fatalf("%s: program %d has %d references, want %d", s.name, id, progs[id], n)
					}
				}
			}
			if end == "close while held" {
				m.Acquire() // e.g. a program that references the array
			}
			m.Close()
			if progs[2] != 0 {
				t.Errorf("closed array still holds program 2")
			}
			if err := m.UpdateBytes(u32(0), u32(3), UpdateAny); !errors.Is(err, ErrClosed) {
				t.Errorf("update of a closed array: %v, want ErrClosed", err)
			}
			if progs[3] != 0 {
				t.Errorf("failed update kept a reference to program 3")
			}
			if end == "close while held" {
				m.Release()
			}
			waitReclaimed(t)
		})
	}
}
