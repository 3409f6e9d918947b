package maps

import (
	"errors"
	"testing"
	"unsafe"
)

// queueScript pushes 1..3 into a map of 3 and pops; order lists the values
// in pop order after pushing 1, 2, 3 and then 4 with UpdateExist.
func queueScript(stack bool) []step {
	first, last := 1, 3
	if stack {
		first, last = 3, 1
	}
	s := []step{
		get(0, -1, ErrKeyNotExist),
		pop(0, -1, ErrKeyNotExist),
		upd(0, 1, UpdateAny, nil),
		upd(0, 2, UpdateAny, nil),
		upd(0, 3, UpdateAny, nil),
		upd(0, 4, UpdateAny, ErrFull),
		upd(0, 4, UpdateNoExist, ErrInvalid),
		upd(0, 4, 4, ErrInvalid),
		get(0, first, nil),
		get(0, first, nil),
		del(0, ErrInvalid),
		{op: opNextKey, want: -1, err: ErrInvalid},
		pop(0, first, nil),
		pop(0, 2, nil),
		pop(0, last, nil),
		pop(0, -1, ErrKeyNotExist),
		// Overwrite: a full map with UpdateExist drops its oldest value.
		upd(0, 1, UpdateAny, nil),
		upd(0, 2, UpdateAny, nil),
		upd(0, 3, UpdateAny, nil),
		upd(0, 4, UpdateExist, nil),
	}
	if stack {
		return append(s, pop(0, 4, nil), pop(0, 3, nil), pop(0, 2, nil), pop(0, -1, ErrKeyNotExist))
	}
	return append(s, pop(0, 2, nil), pop(0, 3, nil), pop(0, 4, nil), pop(0, -1, ErrKeyNotExist))
}

func TestQueueStackSemantics(t *testing.T) {
	for _, tt := range []struct {
		typ   Type
		value uint32
	}{{Queue, 4}, {Stack, 4}, {Queue, 13}, {Stack, 1}} {
		t.Run(tt.typ.String(), func(t *testing.T) {
			m := newTestMap(t, Spec{Type: tt.typ, ValueSize: tt.value, MaxEntries: 3}, Options{})
			sh := shape{valueSize: int(tt.value), noKey: true}
			sh.check(t, ours{m, 1}, queueScript(tt.typ == Stack))
		})
	}
}

func TestQueueProgramSide(t *testing.T) {
	m := newTestMap(t, Spec{Type: Queue, ValueSize: 8, MaxEntries: 2}, Options{})
	q := m.(QueueStack)
	for _, v := range []uint64{1, 2} {
		if err := q.Push(unsafe.Pointer(&v), 0); err != nil {
			t.Fatal(err)
		}
	}
	v := uint64(3)
	if err := q.Push(unsafe.Pointer(&v), 0); !errors.Is(err, ErrFull) {
		t.Errorf("push on full: %v", err)
	}
	if err := q.Push(unsafe.Pointer(&v), UpdateExist); err != nil {
		t.Errorf("push with EXIST on full: %v", err)
	}
	var out uint64
	if err := q.Peek(unsafe.Pointer(&out)); err != nil || out != 2 {
		t.Errorf("peek: %d %v", out, err)
	}
	for _, want := range []uint64{2, 3} {
		if err := q.Pop(unsafe.Pointer(&out)); err != nil || out != want {
			t.Errorf("pop: %d %v, want %d", out, err, want)
		}
	}
	if err := q.Pop(unsafe.Pointer(&out)); !errors.Is(err, ErrKeyNotExist) {
		t.Errorf("pop on empty: %v", err)
	}
	if m.Lookup(nil, 0) != nil {
		t.Error("program lookup in a queue")
	}
	if err := m.Update(nil, unsafe.Pointer(&v), 0, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("program update of a queue: %v", err)
	}
	if err := q.Push(unsafe.Pointer(&v), UpdateNoExist); !errors.Is(err, ErrInvalid) {
		t.Errorf("push with NOEXIST: %v", err)
	}
	if err := m.UpdateBytes(u32(1), make([]byte, 8), 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("push with a key: %v", err)
	}
}

func TestQueueWraparound(t *testing.T) {
	m := newTestMap(t, Spec{Type: Queue, ValueSize: 4, MaxEntries: 5}, Options{})
	q := m.(QueueStack)
	next, want := uint32(0), uint32(0)
	for round := range 50 {
		for range round%5 + 1 {
			if err := q.Push(unsafe.Pointer(&next), 0); err != nil {
				t.Fatal(err)
			}
			next++
		}
		for range round%5 + 1 {
			var v uint32
			if err := q.Pop(unsafe.Pointer(&v)); err != nil || v != want {
				t.Fatalf("round %d: pop %d %v, want %d", round, v, err, want)
			}
			want++
		}
	}
}
