package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// tracePipe prefixes each bpf_trace_printk message with what the kernel's
// trace_pipe shows before it: the task's name right-aligned in 16 columns
// and its pid, the CPU, the flags column and the monotonic time in seconds
// ("           bpfvm-4242    [000] ..... 9620.158703: bpf_trace_printk:
// len 20"). Runs here have no irq or preemption state: the flags are dots.
type tracePipe struct {
	mu   sync.Mutex
	w    io.Writer
	comm string
	pid  int
}

func newTracePipe(w io.Writer) *tracePipe {
	comm := filepath.Base(os.Args[0])
	if len(comm) > 15 {
		comm = comm[:15] // TASK_COMM_LEN
	}
	return &tracePipe{w: w, comm: comm, pid: os.Getpid()}
}

// Write takes one message, as ProgramOptions.Output gets it.
func (t *tracePipe) Write(msg []byte) (int, error) {
	now := monotonicNow()
	t.mu.Lock()
	defer t.mu.Unlock()
	line := fmt.Appendf(nil, "%16s-%-7d [%03d] ..... %5d.%06d: %s", t.comm, t.pid, 0, now/time.Second, now%time.Second/time.Microsecond, msg)
	if _, err := t.w.Write(line); err != nil {
		return 0, err
	}
	return len(msg), nil
}
