package maps

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm/vm"
)

// RingBuffer is BPF_MAP_TYPE_RINGBUF (the type constant has the name
// RingBuf); New returns it as a Map and users type-assert it. It is a
// power-of-two data area of max_entries bytes holding variable-size records
// in the kernel's format, written by programs and read by Go (RingReader).
//
// As in the kernel the data pages are mapped twice, back to back, so a
// record that wraps around the end is contiguous in memory for the program
// writing it and the reader copying it. Each record is an 8-byte header and
// the sample, padded to 8 bytes:
//
//	len    uint32  sample length | RingBusyBit while reserved | RingDiscardBit
//	pg_off uint32  pages from the start of the ring's block to the header
//
// Producers (Reserve) are serialised by a mutex, the kernel's spinlock;
// Commit only stores the final length. The consumer reads records in
// position order, so a record still reserved holds back later ones that are
// already committed.
type RingBuffer struct {
	header
	spec Spec
	mem  *vm.Mem
	base uint64 // the block: a page of positions, then the data twice
	data uint64
	mask uint64

	mu      sync.Mutex // producers
	consMu  sync.Mutex // consumers
	waiters atomic.Int32
	wakeMu  sync.Mutex
	wake    chan struct{} // closed to wake waiting readers
	closed  chan struct{}
	closeMu sync.Once
}

// Ring buffer record header bits and helper flags, as in the kernel's UAPI.
const (
	RingBusyBit    = 1 << 31 // BPF_RINGBUF_BUSY_BIT
	RingDiscardBit = 1 << 30 // BPF_RINGBUF_DISCARD_BIT
	RingHeaderSize = 8       // BPF_RINGBUF_HDR_SZ

	RingAvailData = 0 // BPF_RB_AVAIL_DATA
	RingRingSize  = 1 // BPF_RB_RING_SIZE
	RingConsPos   = 2 // BPF_RB_CONS_POS
	RingProdPos   = 3 // BPF_RB_PROD_POS
)

// Header field offsets of ring buffers, relative to HeaderFields.
const (
	RingBufFieldData     = 0  // uint64: address of the data area
	RingBufFieldMask     = 8  // uint64: data size - 1
	RingBufFieldConsumer = 16 // uint64: address of the consumer position
	RingBufFieldProducer = 24 // uint64: address of the producer position
)

// Offsets of the positions in the ring's first page; apart, so producers
// and the consumer do not share a cache line.
const (
	ringConsOff = 0
	ringProdOff = 128
)

// ringMaxRecord is RINGBUF_MAX_RECORD_SZ.
const ringMaxRecord = (1<<32 - 1) / 4

func newRingBuf(spec Spec, opts Options) (*RingBuffer, error) {
	page := uint64(os.Getpagesize())
	size := uint64(spec.MaxEntries)
	mem, err := vm.Alloc(int(page + 2*size))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	r := &RingBuffer{spec: spec, mem: mem, base: mem.Addr(), mask: size - 1, wake: make(chan struct{}), closed: make(chan struct{})}
	r.data = r.base + page
	if err := doubleMap(r.data, size); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	if err := r.header.init(r); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	*(*uint64)(r.field(RingBufFieldData)) = r.data
	*(*uint64)(r.field(RingBufFieldMask)) = r.mask
	*(*uint64)(r.field(RingBufFieldConsumer)) = r.base + ringConsOff
	*(*uint64)(r.field(RingBufFieldProducer)) = r.base + ringProdOff
	return r, nil
}

// doubleMap maps the same size bytes of a memory file at addr and at
// addr+size, over the block vm.Alloc reserved (whose Free unmaps both).
func doubleMap(addr, size uint64) error {
	fd, err := unix.MemfdCreate("bpfvm-ringbuf", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("ring buffer memory: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fmt.Errorf("ring buffer memory: %w", err)
	}
	for _, at := range []uint64{addr, addr + size} {
		_, err := unix.MmapPtr(fd, 0, vm.Ptr(at), uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED)
		if err != nil {
			return fmt.Errorf("ring buffer mapping: %w", err)
		}
	}
	return nil
}

// Spec returns the spec the ring was created with.
func (r *RingBuffer) Spec() Spec { return r.spec }

// Memory is both mappings of the data: samples may wrap into the second.
func (r *RingBuffer) Memory() []vm.Region {
	return []vm.Region{{Start: r.data, End: r.data + 2*(r.mask+1), Writable: true}}
}

func (r *RingBuffer) pos(off uint64) *uint64 { return (*uint64)(vm.Ptr(r.base + off)) }

func (r *RingBuffer) recLen(hdr uint64) *uint32 { return (*uint32)(vm.Ptr(hdr)) }

// Reserve reserves a sample of size bytes for a program to fill, or returns
// nil when the ring has no room. The sample must be passed to Commit.
func (r *RingBuffer) Reserve(size uint64) unsafe.Pointer {
	if size > ringMaxRecord {
		return nil
	}
	n := (size + RingHeaderSize + 7) &^ 7
	if n > r.mask+1 {
		return nil
	}
	cons := atomic.LoadUint64(r.pos(ringConsOff))
	r.mu.Lock()
	prod := atomic.LoadUint64(r.pos(ringProdOff))
	// As in the kernel, the producer stays less than a full ring ahead.
	if prod+n-cons > r.mask {
		r.mu.Unlock()
		return nil
	}
	hdr := r.data + prod&r.mask
	atomic.StoreUint32(r.recLen(hdr), uint32(size)|RingBusyBit)
	*(*uint32)(vm.Ptr(hdr + 4)) = uint32((hdr - r.base) / uint64(os.Getpagesize()))
	atomic.StoreUint64(r.pos(ringProdOff), prod+n)
	r.mu.Unlock()
	return vm.Ptr(hdr + RingHeaderSize)
}

// Commit publishes a reserved sample, or with discard marks it to be
// skipped by readers. It takes no lock.
func (r *RingBuffer) Commit(sample unsafe.Pointer, discard bool) {
	hdr := vm.Addr(sample) - RingHeaderSize
	l := atomic.LoadUint32(r.recLen(hdr)) &^ RingBusyBit
	if discard {
		l |= RingDiscardBit
	}
	atomic.StoreUint32(r.recLen(hdr), l)
	if r.waiters.Load() != 0 {
		r.notify()
	}
}

// Output copies data into a new record: bpf_ringbuf_output. ErrAgain when
// the ring has no room.
func (r *RingBuffer) Output(data []byte) error {
	p := r.Reserve(uint64(len(data)))
	if p == nil {
		return fmt.Errorf("ring buffer %s: record of %d bytes: %w", r.spec.Name, len(data), ErrAgain)
	}
	copy(unsafe.Slice((*byte)(p), len(data)), data)
	r.Commit(p, false)
	return nil
}

// Query answers bpf_ringbuf_query; unknown flags give 0.
func (r *RingBuffer) Query(flag uint64) uint64 {
	switch flag {
	case RingAvailData:
		return atomic.LoadUint64(r.pos(ringProdOff)) - atomic.LoadUint64(r.pos(ringConsOff))
	case RingRingSize:
		return r.mask + 1
	case RingConsPos:
		return atomic.LoadUint64(r.pos(ringConsOff))
	case RingProdPos:
		return atomic.LoadUint64(r.pos(ringProdOff))
	}
	return 0
}

// notify wakes every waiting reader.
func (r *RingBuffer) notify() {
	r.wakeMu.Lock()
	close(r.wake)
	r.wake = make(chan struct{})
	r.wakeMu.Unlock()
}

// consume copies out the next committed record, skipping discarded ones.
// It reports false when the ring is empty or the next record is still
// reserved.
func (r *RingBuffer) consume(buf []byte) ([]byte, bool) {
	r.consMu.Lock()
	defer r.consMu.Unlock()
	if r.mem == nil {
		return nil, false // closed
	}
	cons := atomic.LoadUint64(r.pos(ringConsOff))
	prod := atomic.LoadUint64(r.pos(ringProdOff))
	for cons < prod {
		hdr := r.data + cons&r.mask
		l := atomic.LoadUint32(r.recLen(hdr))
		if l&RingBusyBit != 0 {
			return nil, false
		}
		size := uint64(l &^ RingDiscardBit)
		n := (size + RingHeaderSize + 7) &^ 7
		if n > prod-cons {
			// A reserved record lies inside [cons, prod), so only a wild
			// write of a checked program (granted the whole data area)
			// makes a length run past the producer. Where the next record
			// starts is lost: drop what has been produced rather than
			// copy or skip past it.
			atomic.StoreUint64(r.pos(ringConsOff), prod)
			return nil, false
		}
		keep := l&RingDiscardBit == 0
		var rec []byte
		if keep {
			if buf == nil || uint64(cap(buf)) < size {
				buf = make([]byte, size) // non-nil, even for an empty record
			}
			rec = buf[:size]
			copy(rec, bytesAt(hdr+RingHeaderSize, size))
		}
		cons += n
		// Only now may producers reuse the space.
		atomic.StoreUint64(r.pos(ringConsOff), cons)
		if keep {
			return rec, true
		}
	}
	return nil, false
}

// NewReader returns a reader of the ring's records. Several readers share
// the records: each is read by exactly one of them.
func (r *RingBuffer) NewReader() *RingReader {
	return &RingReader{r: r, closed: make(chan struct{})}
}

// RingReader reads records from a RingBuffer.
type RingReader struct {
	r      *RingBuffer
	once   sync.Once
	closed chan struct{}
}

// Read returns the next committed record, copied out of the ring, waiting
// for one if need be. It skips discarded records and returns an error
// wrapping ErrClosed (which matches os.ErrClosed) once the reader or the
// ring is closed.
func (rd *RingReader) Read() ([]byte, error) { return rd.ReadContext(context.Background()) }

// ReadContext is Read that also gives up when ctx is done.
func (rd *RingReader) ReadContext(ctx context.Context) ([]byte, error) {
	return rd.ReadInto(ctx, nil)
}

// ReadInto is ReadContext that copies the record into buf's storage when
// it is large enough.
func (rd *RingReader) ReadInto(ctx context.Context, buf []byte) ([]byte, error) {
	r := rd.r
	// A read in progress keeps the ring's memory alive.
	if !r.Acquire() {
		return nil, fmt.Errorf("ring buffer %s: %w", r.spec.Name, ErrClosed)
	}
	defer r.Release()
	for {
		select {
		case <-rd.closed:
			return nil, fmt.Errorf("ring buffer reader: %w", ErrClosed)
		case <-r.closed:
			return nil, fmt.Errorf("ring buffer %s: %w", r.spec.Name, ErrClosed)
		default:
		}
		if rec, ok := r.consume(buf); ok {
			return rec, nil
		}
		// Announce the wait, then look again: a Commit either sees the
		// announcement or committed before the second look.
		r.wakeMu.Lock()
		wake := r.wake
		r.wakeMu.Unlock()
		r.waiters.Add(1)
		if rec, ok := r.consume(buf); ok {
			r.waiters.Add(-1)
			return rec, nil
		}
		select {
		case <-wake:
		case <-rd.closed:
		case <-r.closed:
		case <-ctx.Done():
			r.waiters.Add(-1)
			return nil, ctx.Err()
		}
		r.waiters.Add(-1)
	}
}

// Available returns the bytes between the consumer and producer positions:
// records not yet read, including reserved and discarded ones, with their
// headers; 0 once the reader or the ring is closed.
func (rd *RingReader) Available() int {
	r := rd.r
	if !r.Acquire() {
		return 0
	}
	defer r.Release()
	select {
	case <-rd.closed:
		return 0
	case <-r.closed:
		return 0
	default:
	}
	return int(r.Query(RingAvailData))
}

// Closed reports whether the reader or its ring is closed.
func (rd *RingReader) Closed() bool {
	select {
	case <-rd.closed:
		return true
	case <-rd.r.closed:
		return true
	default:
		return false
	}
}

// Close makes pending and future reads return ErrClosed.
func (rd *RingReader) Close() error {
	rd.once.Do(func() { close(rd.closed) })
	return nil
}

// Lookup gives programs nothing: rings have no keys.
func (r *RingBuffer) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update is not supported, as in the kernel.
func (r *RingBuffer) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of a ringbuf: %w", ErrNotSupported)
}

// Delete is not supported, as in the kernel.
func (r *RingBuffer) Delete(unsafe.Pointer) error {
	return fmt.Errorf("delete from a ringbuf: %w", ErrNotSupported)
}

// LookupBytes is not supported: use a RingReader.
func (r *RingBuffer) LookupBytes(key, value []byte) error {
	return fmt.Errorf("lookup in a ringbuf: %w", ErrNotSupported)
}

// UpdateBytes is not supported, as in the kernel.
func (r *RingBuffer) UpdateBytes(key, value []byte, flags uint64) error {
	return fmt.Errorf("update of a ringbuf: %w", ErrNotSupported)
}

// LookupAndDelete is not supported: use a RingReader.
func (r *RingBuffer) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a ringbuf: %w", ErrNotSupported)
}

// NextKey is not supported, as in the kernel.
func (r *RingBuffer) NextKey(key, next []byte) error {
	return fmt.Errorf("next key of a ringbuf: %w", ErrNotSupported)
}

// Close wakes readers with ErrClosed and drops the creator's reference:
// programs that reference the ring may still write to it, and the memory
// lives until they are gone.
func (r *RingBuffer) Close() error {
	r.closeMu.Do(func() { close(r.closed) })
	return r.header.Close()
}

// free unmaps the ring: no program, reader or run holds it any more.
func (r *RingBuffer) free() error {
	r.consMu.Lock()
	defer r.consMu.Unlock()
	err := r.mem.Free()
	r.mem = nil
	return err
}
