package runner

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bpfvm/bpfvm/maps"
)

// Runs hold their runner alone: many goroutines taking and giving back
// fewer runners never find one in use, and every run gets one.
func TestRunnersExclusive(t *testing.T) {
	for _, n := range []int{1, 2, 3, 48, 49, 100} {
		c := NewCPUs(n)
		busy := make([]atomic.Int32, n)
		var wg sync.WaitGroup
		var runs atomic.Int64
		for g := range 2*n + 3 {
			wg.Go(func() {
				for k := range 300 {
					var ctx context.Context
					if (g+k)%3 == 0 {
						ctx = context.Background()
					}
					r, err := c.Acquire(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if busy[r.cpu].Add(1) != 1 {
						t.Errorf("runner %d taken twice", r.cpu)
					}
					if k%7 == 0 {
						time.Sleep(time.Microsecond)
					}
					busy[r.cpu].Add(-1)
					runs.Add(1)
					c.Release(r)
				}
			})
		}
		wg.Wait()
		if want := int64((2*n + 3) * 300); runs.Load() != want {
			t.Errorf("%d runners: %d runs, want %d", n, runs.Load(), want)
		}
		// All free again: n runs at once take the n runners.
		var held []*Runner
		seen := make([]bool, n)
		for range n {
			r, err := c.Acquire(nil)
			if err != nil {
				t.Fatal(err)
			}
			if seen[r.cpu] {
				t.Errorf("runner %d taken twice", r.cpu)
			}
			seen[r.cpu] = true
			held = append(held, r)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Acquire(ctx); err == nil {
			t.Errorf("%d runners: one more run took a runner", n)
		}
		for _, r := range held {
			c.Release(r)
		}
		c.Close()
	}
}

// A run waiting for a runner gives up when its context is done or the
// runners are closed; close lets the runs in progress finish.
func TestRunnersWait(t *testing.T) {
	c := NewCPUs(1)
	r, err := c.Acquire(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait with a context: %v, want DeadlineExceeded", err)
	}
	// A waiter is handed the runner when it is released.
	got := make(chan *Runner)
	go func() {
		r, err := c.Acquire(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	time.Sleep(10 * time.Millisecond)
	c.Release(r)
	r = <-got
	if r == nil {
		t.FailNow()
	}
	// A waiter gives up on close, which does not wait for the run holding
	// the runner (it may be a helper of that run calling it): the
	// runner's memory goes when the run releases it.
	if err := r.memory(64); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error)
	go func() {
		_, err := c.Acquire(nil)
		waitErr <- err
	}()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	if err := <-waitErr; !errors.Is(err, maps.ErrClosed) {
		t.Errorf("wait during close: %v, want maps.ErrClosed", err)
	}
	if r.stack == nil || r.buf == nil {
		t.Error("close freed the memory of a runner in use")
	}
	c.Release(r)
	if r.stack != nil || r.buf != nil {
		t.Error("memory of a closed runner kept after its run")
	}
	if _, err := c.Acquire(nil); !errors.Is(err, maps.ErrClosed) {
		t.Errorf("acquire after close: %v, want maps.ErrClosed", err)
	}
}
