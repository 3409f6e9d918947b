package bpfvm

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"

	"bpfvm/maps"
	"bpfvm/vm"
)

// cpus is the set of runners shared by the programs and maps of a
// collection. A run holds one runner for its whole duration: the runner's
// index is the CPU number the program sees (bpf_get_smp_processor_id, the
// slot of per-CPU maps), and it owns the run's off-heap stack and buffer.
// Runs beyond the number of runners wait for one to be free, as programs on
// a machine wait for a CPU.
type cpus struct {
	domain    *maps.Domain
	free      chan int
	runners   []*runner
	closed    chan struct{}
	closeOnce sync.Once
}

// runner holds the off-heap memory of the runs on one CPU.
type runner struct {
	cpu      int
	stack    *vm.Mem
	buf      *vm.Mem
	env      vm.Env
	pkt      packetState
	regions  []vm.Region // regions[0] is the packet
	prog     *Program    // the program running, for helpers
	redirect Redirect
	hs       helperState // helpers' per-runner state (helpers_state.go)
}

// setPacket moves the packet boundaries (after bpf_xdp_adjust_head and
// friends) and updates what checked accesses and LD_ABS may touch.
func (r *runner) setPacket(p packetState) {
	r.pkt = p
	reg := vm.Region{Start: p.meta, End: p.end, Writable: true}
	r.regions[0] = reg
	r.env.Packet = vm.Region{Start: p.data, End: p.end, Writable: true}
	if r.prog != nil && r.prog.verified {
		// Verified programs load the packet pointers from the shadow
		// slots (see rewriteContext).
		shadow := r.buf.Addr() + r.prog.shadowOffset()
		*(*uint64)(vm.Ptr(shadow + shadowData)) = p.data
		*(*uint64)(vm.Ptr(shadow + shadowEnd)) = p.end
		*(*uint64)(vm.Ptr(shadow + shadowMeta)) = p.meta
	}
}

func newCPUs(n int) *cpus {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	c := &cpus{domain: maps.NewDomain(n), free: make(chan int, n), runners: make([]*runner, n), closed: make(chan struct{})}
	for i := range n {
		c.runners[i] = &runner{cpu: i}
		c.runners[i].hs.rng.Seed(rand.Uint64(), rand.Uint64())
		c.free <- i
	}
	return c
}

// acquire takes a free runner, waiting for one if all are busy, and enters
// the reclamation domain for it.
func (c *cpus) acquire(ctx context.Context) (*runner, error) {
	var i int
	if ctx == nil {
		ctx = context.Background()
	}
	select {
	case <-c.closed:
		return nil, ErrClosed
	case i = <-c.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.domain.Enter(i)
	return c.runners[i], nil
}

func (c *cpus) release(r *runner) {
	r.prog = nil
	c.domain.Exit(r.cpu)
	c.free <- r.cpu
}

// memory makes sure the runner has a stack and a buffer of at least need
// bytes.
func (r *runner) memory(need int) error {
	if r.stack == nil {
		stack, err := vm.Alloc(vm.MaxFrames * vm.StackSize)
		if err != nil {
			return err
		}
		r.stack = stack
	}
	if r.buf == nil || len(r.buf.Bytes()) < need {
		if r.buf != nil {
			r.buf.Free()
			r.buf = nil
		}
		buf, err := vm.Alloc(need)
		if err != nil {
			return err
		}
		r.buf = buf
	}
	return nil
}

// close waits for runs in progress, then frees every runner's memory.
func (c *cpus) close() {
	c.closeOnce.Do(c.drain)
}

func (c *cpus) drain() {
	close(c.closed)
	for range c.runners {
		<-c.free
	}
	for _, r := range c.runners {
		if r.stack != nil {
			r.stack.Free()
			r.stack = nil
		}
		if r.buf != nil {
			r.buf.Free()
			r.buf = nil
		}
		r.freeHelperState()
	}
}
