package maps

import (
	"sync/atomic"
	"testing"
)

func TestDefer(t *testing.T) {
	// A deferred free waits for the runs inside when it was deferred, in
	// every live domain, and for nothing else.
	a, b := NewDomain(2), NewDomain(1)
	defer a.Close()
	defer b.Close()
	tests := []struct {
		name   string
		before func() // runs inside at Defer
		after  func() // runs entering after Defer
		wait   bool   // the free waits for the runs of before
	}{
		{"no run inside", func() {}, func() {}, false},
		{"run of the same domain", func() { a.Enter(0) }, func() {}, true},
		{"run of another domain", func() { b.Enter(0) }, func() {}, true},
		{"run entered after", func() {}, func() { a.Enter(1); b.Enter(0) }, false},
		{"idle runner of a busy domain", func() { a.Enter(1) }, func() { a.Enter(0) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				for i := range 2 {
					a.Exit(i)
				}
				b.Exit(0)
				waitReclaimed(t)
			}()
			tt.before()
			var freed atomic.Bool
			Defer(func() { freed.Store(true) })
			tt.after()
			if freed.Load() == tt.wait {
				t.Fatalf("freed at once: %v, want %v", freed.Load(), !tt.wait)
			}
			if tt.wait {
				if Reclaim() == 0 || freed.Load() {
					t.Fatal("freed while a run that was inside is still inside")
				}
				a.Exit(0)
				a.Exit(1)
				b.Exit(0)
				waitReclaimed(t)
				if !freed.Load() {
					t.Fatal("not freed after the runs left")
				}
			}
		})
	}
	t.Run("closed domain", func(t *testing.T) {
		c := NewDomain(1)
		c.Enter(0)
		c.Close() // its runners stopped for good
		var freed atomic.Bool
		Defer(func() { freed.Store(true) })
		waitReclaimed(t)
		if !freed.Load() {
			t.Error("free waits for a closed domain")
		}
	})
}
