// Package runner runs loaded programs as the kernel's BPF_PROG_TEST_RUN
// does: per-CPU runners with their off-heap stacks and run buffers, the
// packet model (headroom, metadata, tailroom and the shadow packet
// pointers of verified programs), the state helpers see of a run (Of),
// tail calls between programs, the lifetime of a loaded program, and the
// host's world networking helpers ask (Net: sockets, routes, neighbours,
// devices; net.go, fib.go). It sits below the public API (package bpfvm)
// and above the engines.
package runner

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// CPUs is the set of runners shared by the programs and maps of a
// collection. A run holds one runner for its whole duration: the runner's
// index is the CPU number the program sees (bpf_get_smp_processor_id, the
// slot of per-CPU maps), and it owns the run's off-heap stack and buffer.
// Runs beyond the number of runners wait for one to be free, as programs on
// a machine wait for a CPU.
//
// A run writes no cache line that runs on other runners write: as the
// kernel's test run runs on the current CPU, a run takes the runner its P
// (the Go scheduler's CPU) last gave back, cached per P in a sync.Pool,
// and marks it busy in the runner's own line (Runner.busy). Only when its
// P has none (the first runs, after a GC, when runs outnumber Ps) does it
// look for a free runner from the first on. Runs that find none queue up
// in waiters, and a release hands its runner to the first of them rather
// than freeing it.
type CPUs struct {
	domain  *maps.Domain
	runners []*Runner
	// cache holds free runners per P, the one each P gave back last. It
	// may hold a runner twice, or one another run has taken since (its
	// busy flag decides), and a GC may drop any: take then scans.
	cache sync.Pool

	mu      sync.Mutex
	waiters []chan int    // FIFO; each has room for the runner handed over
	nwait   atomic.Int32  // waiters, and runs about to queue up (under mu)
	closing atomic.Bool   // set by close: acquire fails
	closed  chan struct{} // closed by close: waiting runs give up
	retired atomic.Int32  // runners whose memory close or give has freed

	closeOnce sync.Once
	// refs are the holders of the runners (Hold, Drop): a collection, and
	// the programs it handed out or a standalone program.
	refs atomic.Int32
}

// NewCPUs makes n runners (n <= 0: GOMAXPROCS) with their reclamation
// domain, and one reference to them for the caller to Drop.
func NewCPUs(n int) *CPUs {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	c := &CPUs{domain: maps.NewDomain(n), runners: make([]*Runner, n), closed: make(chan struct{})}
	c.refs.Store(1)
	for i := range n {
		r := &Runner{cpu: i}
		r.hs.rng.Seed(rand.Uint64(), rand.Uint64())
		r.between = r.nextRun
		c.runners[i] = r
	}
	return c
}

// take takes a free runner without waiting: the one this P cached, else
// the first free.
func (c *CPUs) take() (int, bool) {
	if r, _ := c.cache.Get().(*Runner); r != nil {
		r.cached.Store(false)
		if r.busy.CompareAndSwap(false, true) {
			return r.cpu, true
		}
		// Taken meanwhile by a run on a given CPU: its release caches it
		// again.
	}
	for i, r := range c.runners {
		// A load first: a busy runner's line stays with its run.
		if !r.busy.Load() && r.busy.CompareAndSwap(false, true) {
			// Not cached (take found no runner there): its release
			// caches it for this P.
			r.cached.Store(false)
			return i, true
		}
	}
	return 0, false
}

// takeRunner takes runner i if it is free.
func (c *CPUs) takeRunner(i int) bool {
	r := c.runners[i]
	return !r.busy.Load() && r.busy.CompareAndSwap(false, true)
}

// free marks runner i free and, unless it is cached already, caches it
// for this P's next run. Runs on a given CPU (AcquireOn) leave the cache
// alone, as running a program on another CPU does not move the caller.
func (c *CPUs) free(i int, cache bool) {
	r := c.runners[i]
	r.busy.Store(false)
	if cache && !r.cached.Load() && !r.cached.Swap(true) {
		c.cache.Put(r)
	}
}

// Acquire takes a free runner, waiting for one if all are busy, and enters
// the reclamation domain for it.
func (c *CPUs) Acquire(ctx context.Context) (*Runner, error) {
	if c.closing.Load() {
		return nil, maps.ErrClosed
	}
	i, ok := c.take()
	if !ok {
		var err error
		if i, err = c.wait(ctx); err != nil {
			return nil, err
		}
	}
	c.domain.Enter(i)
	r := c.runners[i]
	r.on = false
	return r, nil
}

// wait queues up for a runner, until ctx is done or the runners are closed.
func (c *CPUs) wait(ctx context.Context) (int, error) {
	c.mu.Lock()
	// Announce the wait before looking again: a release either sees it
	// or frees its runner before the look (see release).
	c.nwait.Add(1)
	if i, ok := c.take(); ok {
		c.nwait.Add(-1)
		c.mu.Unlock()
		return i, nil
	}
	if c.closing.Load() {
		c.nwait.Add(-1)
		c.mu.Unlock()
		return 0, maps.ErrClosed
	}
	ch := make(chan int, 1)
	c.waiters = append(c.waiters, ch)
	c.mu.Unlock()

	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	closed := c.closed
	var err error
	select {
	case i := <-ch:
		return i, nil
	case <-done:
		err = ctx.Err()
	case <-closed:
		err = maps.ErrClosed
	}
	// Leave the queue, unless a release has just handed a runner over:
	// then pass it on.
	c.mu.Lock()
	for k, w := range c.waiters {
		if w == ch {
			c.waiters = append(c.waiters[:k], c.waiters[k+1:]...)
			c.nwait.Add(-1)
			c.mu.Unlock()
			return 0, err
		}
	}
	c.mu.Unlock()
	c.give(<-ch, true)
	return 0, err
}

// Release gives back a runner Acquire took.
func (c *CPUs) Release(r *Runner) {
	r.prog = nil
	c.domain.Exit(r.cpu)
	c.give(r.cpu, !r.on)
}

// give frees runner i, or hands it to the first run waiting; once the
// runners are closed it frees the runner's memory instead.
func (c *CPUs) give(i int, cache bool) {
	if c.closing.Load() {
		c.retire(i)
		return
	}
	if c.nwait.Load() == 0 {
		c.free(i, cache)
		// Closed meanwhile: either close took the runner, or it is ours
		// to retire.
		if c.closing.Load() {
			if c.takeRunner(i) {
				c.retire(i)
			}
			return
		}
		// A run that announced its wait after the check above may have
		// looked before the runner was free: take the runner back and
		// hand it over, unless someone has taken it meanwhile.
		if c.nwait.Load() == 0 || !c.takeRunner(i) {
			return
		}
	}
	c.mu.Lock()
	if len(c.waiters) == 0 {
		// Waits announced but not queued look again under mu.
		c.free(i, cache)
		c.mu.Unlock()
		return
	}
	ch := c.waiters[0]
	c.waiters = c.waiters[1:]
	c.nwait.Add(-1)
	c.mu.Unlock()
	ch <- i // never blocks: room for one
}

// Close stops the runners: runs waiting for one and runs that start from
// now on fail with maps.ErrClosed. It does not wait for runs in progress (it may
// be called from a helper inside one): an idle runner's memory is freed at
// once, a busy one's when its run ends (give). Nothing else can reach the
// runners' memory: it is only ever used by the run that holds the runner.
func (c *CPUs) Close() {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		close(c.closed)
		for {
			i, ok := c.take()
			if !ok {
				return
			}
			c.retire(i)
		}
	})
}

// retire frees the memory of runner i, which the caller holds and nobody
// will take again; the last one closes the reclamation domain.
func (c *CPUs) retire(i int) {
	r := c.runners[i]
	if r.stack != nil {
		r.stack.Free()
		r.stack = nil
	}
	if r.buf != nil {
		r.buf.Free()
		r.buf = nil
	}
	r.freeHelperState()
	r.freeNet()
	r.cache = vm.Cache{} // the execution context is freed when unreachable
	if int(c.retired.Add(1)) == len(c.runners) {
		// No run of these runners is left: grace periods need not wait
		// for them any more.
		c.domain.Close()
	}
}

// Len is the number of runners: the number of CPUs programs and per-CPU
// maps see.
func (c *CPUs) Len() int { return len(c.runners) }

// Domain is the reclamation domain of the runners' runs, in which maps
// defer freeing memory a run may still read.
func (c *CPUs) Domain() *maps.Domain { return c.domain }

// Hold takes another reference to the runners; false once the last one is
// dropped.
func (c *CPUs) Hold() bool {
	for {
		n := c.refs.Load()
		if n <= 0 {
			return false
		}
		if c.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Drop drops a reference; the last one closes the runners (Close).
func (c *CPUs) Drop() {
	if c.refs.Add(-1) == 0 {
		c.Close()
	}
}

// AcquireOn takes runner i, waiting while another run holds it (polling:
// a runner being released goes to the first run queued for any runner),
// and enters the reclamation domain for it.
func (c *CPUs) AcquireOn(ctx context.Context, i int) (*Runner, error) {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for backoff := time.Microsecond; ; backoff = min(2*backoff, time.Millisecond) {
		if c.closing.Load() {
			return nil, maps.ErrClosed
		}
		if c.takeRunner(i) {
			c.domain.Enter(i)
			r := c.runners[i]
			r.on = true
			return r, nil
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return nil, ctx.Err()
		case <-c.closed:
			t.Stop()
			return nil, maps.ErrClosed
		}
	}
}
