package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// tracePipe prefixes each bpf_trace_printk message with what the kernel's
// trace_pipe shows before it: the task's name right-aligned in 16 columns
// and its pid, the CPU, the flags column and the monotonic time in seconds
// ("           bpfvm-4242    [000] ..... 9620.158703: bpf_trace_printk:
// len 20"). Runs here have no irq or preemption state: the flags are dots.
//
// Lines are buffered, as the kernel's trace ring buffer holds them for
// trace_pipe to read later: a write to the terminal from inside the run
// would cost more than the program (a bpf_printk was half of a single
// run's time). Flush writes them out; the commands flush after each run
// and at the end, and a full buffer flushes itself. The buffer's pages
// are touched when it is made, and the clock is read through Go's
// (vDSO) monotonic time from an origin taken then, so that a run's first
// line costs neither a page fault nor a clock_gettime system call.
type tracePipe struct {
	mu   sync.Mutex
	w    io.Writer
	comm string
	pid  int
	buf  []byte // lines not yet written
	// mono is CLOCK_MONOTONIC at start.
	mono  time.Duration
	start time.Time
}

// traceBuffer is how much trace output waits for a flush.
const traceBuffer = 16 << 10

func newTracePipe(w io.Writer) *tracePipe {
	comm := filepath.Base(os.Args[0])
	if len(comm) > 15 {
		comm = comm[:15] // TASK_COMM_LEN
	}
	buf := make([]byte, traceBuffer)
	for i := range buf {
		buf[i] = 0 // touch every page: a fresh span's are not yet mapped
	}
	return &tracePipe{w: w, comm: comm, pid: os.Getpid(), buf: buf[:0], mono: monotonicNow(), start: time.Now()}
}

// Flush writes out the buffered lines.
func (t *tracePipe) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.flush()
}

func (t *tracePipe) flush() error {
	if len(t.buf) == 0 {
		return nil
	}
	_, err := t.w.Write(t.buf)
	t.buf = t.buf[:0]
	return err
}

// flushTrace flushes trace output, when w is a tracePipe.
func flushTrace(w io.Writer) {
	if t, ok := w.(*tracePipe); ok {
		t.Flush()
	}
}

// Write takes one message, as ProgramOptions.Output gets it.
func (t *tracePipe) Write(msg []byte) (int, error) {
	now := t.mono + time.Since(t.start)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf)+len(msg)+64 > cap(t.buf) {
		if err := t.flush(); err != nil {
			return 0, err
		}
	}
	t.buf = appendTraceLine(t.buf, t.comm, t.pid, now, msg)
	if len(t.buf) > cap(t.buf) {
		// A line longer than the buffer: out at once, and the
		// buffer back to its size.
		_, err := t.w.Write(t.buf)
		t.buf = make([]byte, 0, traceBuffer)
		if err != nil {
			return 0, err
		}
	}
	return len(msg), nil
}

// appendTraceLine appends a trace_pipe line: "%16s-%-7d [%03d] .....
// %5d.%06d: msg", written out by hand because fmt's first use in a
// process costs more than the run that prints.
func appendTraceLine(b []byte, comm string, pid int, now time.Duration, msg []byte) []byte {
	b = pad(b, 16-len(comm))
	b = append(b, comm...)
	b = append(b, '-')
	n := len(b)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = pad(b, 7-(len(b)-n))
	b = append(b, " [000] ..... "...)
	secs := strconv.AppendInt(nil, int64(now/time.Second), 10)
	b = pad(b, 5-len(secs))
	b = append(b, secs...)
	b = append(b, '.')
	us := strconv.AppendInt(nil, int64(now%time.Second/time.Microsecond), 10)
	b = append(b, "000000"[len(us):]...)
	b = append(b, us...)
	b = append(b, ": "...)
	return append(b, msg...)
}

// pad appends n spaces (none for n <= 0).
func pad(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}
