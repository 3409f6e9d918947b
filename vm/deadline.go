package vm

import (
	"context"
	"time"
)

// Stopping a run on time. Engines look at the run's context between
// slices of work: the interpreter every so many instructions, the JIT when
// native code has used up its chunk of the budget, the callback helpers
// every few callbacks. Two things made a 1 ms deadline overshoot by
// several milliseconds, and each has its fix here:
//
//   - A deadline seen only through ctx.Done() is seen when the runtime's
//     timer has fired, and that timer runs on a P, which a run in native
//     code (or a loaded machine) keeps busy. So the deadline is also read
//     off the clock (Env.Deadline, Stopped).
//   - A slice of a fixed number of instructions takes as long as its
//     instructions do: helper calls, cache misses and callbacks made 2^20
//     instructions of the JIT take milliseconds. So slices are sized by
//     the time they take (NextSlice), aiming at SliceTime each.

// epoch anchors Now.
var epoch = time.Now()

// Now returns the monotonic clock in nanoseconds since an arbitrary start
// (at least 1): the clock of Env.Deadline.
func Now() int64 { return int64(time.Since(epoch)) + 1 }

// SetContext sets e.Context to ctx and e.Deadline to its deadline.
func (e *Env) SetContext(ctx context.Context) {
	e.Context, e.Deadline = ctx, 0
	if ctx == nil {
		return
	}
	if d, ok := ctx.Deadline(); ok {
		e.Deadline = max(int64(d.Sub(epoch))+1, 1)
	}
}

// Stopped returns the error that stops a run at time now (as Now reads
// it): the context's error once it is done, or context.DeadlineExceeded
// once the clock has passed the deadline, even if the context's timer has
// not fired yet.
func (e *Env) Stopped(now int64) error {
	if e.Context == nil {
		return nil
	}
	select {
	case <-e.Context.Done():
		return e.Context.Err()
	default:
	}
	if e.Deadline != 0 && now >= e.Deadline {
		return context.DeadlineExceeded
	}
	return nil
}

// SliceTime is how long engines aim to run between looks at the context
// (and, on the JIT, between returns to Go, which let the runtime stop the
// world): a tenth of the millisecond the README promises.
const SliceTime = 100 * time.Microsecond

// NextSlice sizes the next slice of work from the last one: size units
// took elapsed nanoseconds; the next slice should take about SliceTime.
// It changes by at most 8x at a time (so one slow slice, say the thread
// being descheduled, does not collapse it) and stays within [lo, hi].
func NextSlice(size, elapsed, lo, hi int64) int64 {
	next := size * 8
	if elapsed > 0 && size < 1<<40 {
		next = min(size*int64(SliceTime)/elapsed, next)
	}
	return min(max(next, size/8, lo), hi)
}

// Pacer spaces out the looks at the context of a loop whose rounds are
// short runs or helper calls of unknown cost (callback loops, repeated
// runs): the rounds between looks grow while looks come quickly, so that
// one comes about every SliceTime without a clock read per round. The
// zero value looks at the first round.
type Pacer struct {
	every, n uint64 // rounds between looks, rounds since the last
	last     int64  // Now at the last look
}

// Stopped counts a round and, when a look is due, returns e.Stopped.
func (p *Pacer) Stopped(e *Env) error {
	if e.Context == nil {
		return nil
	}
	if p.n++; p.n < p.every {
		return nil
	}
	now := Now()
	if p.last != 0 {
		p.every = uint64(NextSlice(int64(p.n), now-p.last, 1, 1<<16))
	} else {
		p.every = 1
	}
	p.n, p.last = 0, now
	return e.Stopped(now)
}
