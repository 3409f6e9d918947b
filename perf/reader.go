// Package perf reads the samples programs write to a perf event array
// (bpf_perf_event_output), shaped like github.com/cilium/ebpf/perf so that
// reader code switches between the kernel and bpfvm by its import.
//
// A Reader attaches one ring per CPU (the collection's runners) to the
// array: while it is open, programs on that CPU may output to their slot;
// before it opens, after Pause and after Close they get -ENOENT, as in the
// kernel with no perf event in the slot.
package perf

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/internal/mapref"
	"github.com/bpfvm/bpfvm/maps"
)

// Errors, as cilium/ebpf's.
var (
	// ErrClosed is returned when interacting with a closed Reader; it is
	// os.ErrClosed.
	ErrClosed = os.ErrClosed
	// ErrFlushed is returned by a read after Flush, once the records
	// pending then have been read.
	ErrFlushed = maps.ErrFlushed
)

// IsUnknownEvent reports whether err is a record of a type the reader does
// not know, which it skipped; bpfvm's rings hold none.
func IsUnknownEvent(err error) bool { return errors.Is(err, maps.ErrUnknownEvent) }

// Record is a sample or a lost-samples notice read from a perf ring.
type Record struct {
	// The CPU the sample was written on.
	CPU int
	// The data the program submitted, followed by the packet bytes it
	// asked for, then the kernel's zero padding to a multiple of 8 bytes
	// (with the 4-byte size before it): RawSample may be longer than what
	// was written, as with the kernel.
	RawSample []byte
	// The number of samples lost because the ring was full; RawSample is
	// then empty.
	LostSamples uint64
	// The unread bytes left in this CPU's ring after this record.
	Remaining int
}

// ReaderOptions control the Reader, as cilium/ebpf's.
type ReaderOptions struct {
	// Watermark: the number of unread bytes in a ring that wakes a
	// blocked Read. 0 means 1: every sample wakes it. It must be less than
	// the ring's size.
	Watermark int
	// WakeupEvents, when positive, wakes a blocked Read after this many
	// samples in a ring instead. It excludes Watermark.
	WakeupEvents int
	// Overwritable rings (the kernel's backward rings) are not supported:
	// NewReaderWithOptions returns an error wrapping
	// bpfvm.ErrNotSupported.
	Overwritable bool
}

// Reader reads the rings of a perf event array. Read and ReadInto are for
// one goroutine at a time; Close, Pause and Resume may be called from any
// and Close unblocks a Read in progress.
type Reader struct {
	rd *maps.PerfReader

	mu       sync.Mutex
	deadline time.Time
}

// NewReader creates a Reader of perCPUBuffer bytes per CPU (rounded up to a
// power of two number of pages) for array, a perf event array.
func NewReader(array *bpfvm.Map, perCPUBuffer int) (*Reader, error) {
	return NewReaderWithOptions(array, perCPUBuffer, ReaderOptions{})
}

// NewReaderWithOptions creates a Reader with options.
func NewReaderWithOptions(array *bpfvm.Map, perCPUBuffer int, opts ReaderOptions) (*Reader, error) {
	if perCPUBuffer < 1 {
		return nil, fmt.Errorf("perCPUBuffer must be larger than 0")
	}
	if opts.Overwritable {
		return nil, fmt.Errorf("perf reader: overwritable rings: %w", bpfvm.ErrNotSupported)
	}
	m, err := mapref.Of(array)
	if err != nil {
		return nil, fmt.Errorf("perf reader: %w", err)
	}
	defer m.Release()
	pa, ok := m.(*maps.PerfEvents)
	if !ok {
		return nil, fmt.Errorf("perf reader: map %s is not a perf event array: %w", array.Name(), maps.ErrInvalid)
	}
	rd, err := pa.NewReader(perCPUBuffer, maps.PerfReaderOptions{Watermark: opts.Watermark, WakeupEvents: opts.WakeupEvents})
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", array.Name(), err)
	}
	return &Reader{rd: rd}, nil
}

// Read the next record. As cilium/ebpf's, it waits until a CPU's ring
// holds Watermark bytes (or WakeupEvents samples), Flush or the deadline,
// then returns the records of every ring, and after them an error wrapping
// os.ErrDeadlineExceeded or ErrFlushed if that is what ended the wait.
// RawSample has the kernel's padding (0 to 7 bytes after the sample).
// After Close, and in a Read that Close interrupts, it returns an error
// wrapping ErrClosed.
func (pr *Reader) Read() (Record, error) {
	var r Record
	return r, pr.ReadInto(&r)
}

// ReadInto is Read that reuses rec and its RawSample's storage.
func (pr *Reader) ReadInto(rec *Record) error {
	pr.mu.Lock()
	deadline := pr.deadline
	pr.mu.Unlock()
	r := maps.PerfRecord{Sample: rec.RawSample}
	err := pr.rd.ReadInto(&r, deadline)
	if err != nil {
		return err
	}
	rec.CPU, rec.RawSample, rec.LostSamples, rec.Remaining = r.CPU, r.Sample, r.Lost, r.Remaining
	return nil
}

// SetDeadline sets how long Read and ReadInto wait for a record: until t,
// or without limit for the zero time. It applies to reads that start after
// it.
func (pr *Reader) SetDeadline(t time.Time) {
	pr.mu.Lock()
	pr.deadline = t
	pr.mu.Unlock()
}

// BufferSize is the size of each CPU's ring in bytes.
func (pr *Reader) BufferSize() int { return pr.rd.BufferSize() }

// Flush unblocks Read and ReadInto: they return the records pending, then
// an error wrapping ErrFlushed, once.
func (pr *Reader) Flush() error { return pr.rd.Flush() }

// Pause stops the programs' output: their bpf_perf_event_output returns
// -ENOENT until Resume. Reads block until then (as cilium/ebpf's, which
// gets no notifications), and the rings keep what they hold.
func (pr *Reader) Pause() error { return pr.rd.Pause() }

// Resume undoes Pause.
func (pr *Reader) Resume() error { return pr.rd.Resume() }

// Close frees the rings and makes a Read in progress, and every later
// one, return an error wrapping ErrClosed. Closing twice returns nil.
func (pr *Reader) Close() error { return pr.rd.Close() }
