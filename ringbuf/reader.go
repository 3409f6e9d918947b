// Package ringbuf reads the records programs write to a BPF ring buffer
// map (bpf_ringbuf_output, bpf_ringbuf_reserve/submit), shaped like
// github.com/cilium/ebpf/ringbuf so that reader code switches between the
// kernel and bpfvm by its import.
package ringbuf

import (
	"context"
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
	// ErrClosed is returned when interacting with a closed Reader, or when
	// the ring buffer map is closed; it is os.ErrClosed.
	ErrClosed = os.ErrClosed
	// ErrFlushed is returned by a read after Flush, once the records
	// pending then have been read.
	ErrFlushed = maps.ErrFlushed
)

// Record is a record read from the ring buffer.
type Record struct {
	RawSample []byte
	// The unread bytes left in the ring buffer after this record,
	// headers and records not yet committed included.
	Remaining int
}

// Reader reads records from a ring buffer map. Read and ReadInto are for
// one goroutine at a time; Close may be called from any and unblocks a
// Read in progress.
type Reader struct {
	ring *maps.RingBuffer
	rd   *maps.RingReader

	mu       sync.Mutex
	deadline time.Time
	cancel   context.CancelFunc // of the read in progress
	flushed  bool
}

// NewReader creates a Reader of ringbufMap, a ring buffer map.
func NewReader(ringbufMap *bpfvm.Map) (*Reader, error) {
	m, err := mapref.Of(ringbufMap)
	if err != nil {
		return nil, fmt.Errorf("ring buffer reader: %w", err)
	}
	defer m.Release()
	ring, ok := m.(*maps.RingBuffer)
	if !ok {
		return nil, fmt.Errorf("ring buffer reader: map %s is not a ring buffer: %w", ringbufMap.Name(), maps.ErrInvalid)
	}
	return &Reader{ring: ring, rd: ring.NewReader()}, nil
}

// SetDeadline sets how long Read and ReadInto wait for a record: until t,
// or without limit for the zero time. It applies to reads that start after
// it.
func (r *Reader) SetDeadline(t time.Time) {
	r.mu.Lock()
	r.deadline = t
	r.mu.Unlock()
}

// Read the next record, waiting for one until the deadline. It returns an
// error wrapping os.ErrDeadlineExceeded when the deadline passes first and
// one wrapping ErrClosed once the Reader or the map is closed.
func (r *Reader) Read() (Record, error) {
	var rec Record
	return rec, r.ReadInto(&rec)
}

// ReadInto is Read that reuses rec and its RawSample's storage.
func (r *Reader) ReadInto(rec *Record) error {
	r.mu.Lock()
	deadline, flushed := r.deadline, r.flushed
	ctx, cancel := context.WithCancel(context.Background())
	if flushed {
		cancel() // take what is there, then report the flush
	}
	r.cancel = cancel
	r.mu.Unlock()
	defer cancel()
	if !deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, deadline)
		defer cancelDeadline()
	}
	buf, err := r.rd.ReadInto(ctx, rec.RawSample[:0])
	r.mu.Lock()
	r.cancel = nil
	if errors.Is(err, context.Canceled) && r.flushed {
		r.flushed = false
		r.mu.Unlock()
		return fmt.Errorf("ring buffer: %w", ErrFlushed)
	}
	r.mu.Unlock()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("ring buffer: %w", os.ErrDeadlineExceeded)
	}
	if err != nil {
		return err
	}
	rec.RawSample = buf
	rec.Remaining = r.rd.Available()
	return nil
}

// Flush unblocks Read and ReadInto: they return the records pending, then
// an error wrapping ErrFlushed, once.
func (r *Reader) Flush() error {
	if r.rd.Closed() {
		return fmt.Errorf("ring buffer reader: %w", ErrClosed)
	}
	r.mu.Lock()
	r.flushed = true
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
	return nil
}

// AvailableBytes returns the unread bytes in the ring buffer, headers and
// records not yet committed included; 0 once closed.
func (r *Reader) AvailableBytes() int { return r.rd.Available() }

// BufferSize returns the size of the ring buffer's data area in bytes.
func (r *Reader) BufferSize() int { return int(r.ring.Spec().MaxEntries) }

// Close makes a Read in progress, and every later one, return an error
// wrapping ErrClosed. Closing twice returns nil.
func (r *Reader) Close() error { return r.rd.Close() }
