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
