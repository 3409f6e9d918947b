package maps

import (
	"errors"
	"testing"
)

// TestFreezeWriteInFlight: Freeze fails with ErrBusy while a Go-side write
// is in progress (the kernel's write-active count), succeeds once it has
// ended, and then writes fail with ErrPermission; a second Freeze is
// ErrPermission, as in the kernel.
func TestFreezeWriteInFlight(t *testing.T) {
	m, err := New(Spec{Name: "f", Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: 4}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"begin write", m.BeginWrite, nil},
		{"nested write", m.BeginWrite, nil},
		{"freeze during writes", m.Freeze, ErrBusy},
		{"end writes", func() error { m.EndWrite(); m.EndWrite(); return nil }, nil},
		{"freeze", m.Freeze, nil},
		{"write after freeze", m.BeginWrite, ErrPermission},
		{"freeze again", m.Freeze, ErrPermission},
	}
	for _, s := range steps {
		err := s.do()
		if s.want == nil && err != nil || s.want != nil && !errors.Is(err, s.want) {
			t.Fatalf("%s: %v, want %v", s.name, err, s.want)
		}
	}
	if !m.Frozen() {
		t.Fatal("not frozen")
	}
}
