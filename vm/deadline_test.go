package vm

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNextSlice(t *testing.T) {
	slice := int64(SliceTime)
	for _, c := range []struct {
		name                      string
		size, elapsed, lo, hi, to int64
	}{
		{"on target", 1000, slice, 1, 1 << 20, 1000},
		{"twice as slow", 1000, 2 * slice, 1, 1 << 20, 500},
		{"twice as fast", 1000, slice / 2, 1, 1 << 20, 2000},
		{"grows 8x at most", 1000, 1, 1, 1 << 20, 8000},
		{"no time measured", 1000, 0, 1, 1 << 20, 8000},
		{"shrinks 8x at most", 1000, 1000 * slice, 1, 1 << 20, 125},
		{"at most hi", 1 << 19, 1, 1, 1 << 20, 1 << 20},
		{"at least lo", 100, 1000 * slice, 64, 1 << 20, 64},
	} {
		if got := NextSlice(c.size, c.elapsed, c.lo, c.hi); got != c.to {
			t.Errorf("%s: NextSlice(%d, %d) = %d, want %d", c.name, c.size, c.elapsed, got, c.to)
		}
	}
}

// The deadline is seen by the clock, before the context's timer fires.
func TestStoppedByClock(t *testing.T) {
	var e Env
	if err := e.Stopped(Now()); err != nil {
		t.Fatalf("no context: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	e.SetContext(ctx)
	if e.Deadline == 0 {
		t.Fatal("no deadline")
	}
	if err := e.Stopped(Now()); err != nil {
		t.Fatalf("an hour early: %v", err)
	}
	if err := e.Stopped(e.Deadline); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("at the deadline: %v", err)
	}
	cancel()
	if err := e.Stopped(Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	e.SetContext(context.Background())
	if e.Deadline != 0 || e.Stopped(Now()) != nil {
		t.Fatal("background context stops")
	}
}

// A Pacer looks at the first round, then spaces its looks out.
func TestPacer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := Env{}
	e.SetContext(ctx)
	var p Pacer
	looks := 0
	for range 100000 {
		if p.n+1 >= p.every {
			looks++
		}
		if err := p.Stopped(&e); err != nil {
			t.Fatal(err)
		}
	}
	if looks < 2 || looks > 10000 {
		t.Errorf("%d looks in 100000 quick rounds", looks)
	}
	cancel()
	for range 1 << 17 {
		if err := p.Stopped(&e); err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			return
		}
	}
	t.Error("cancel not seen in 2^17 rounds")
}
