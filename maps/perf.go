package maps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// PerfEvents is BPF_MAP_TYPE_PERF_EVENT_ARRAY (the type constant has the
// name PerfEventArray): one slot per CPU, each
// empty or holding a perf ring that programs write samples into with
// bpf_perf_event_output and a PerfReader reads.
//
// In the kernel a slot holds a perf event's file descriptor, which the
// reader (cilium/ebpf's perf.Reader) opens on that CPU, maps and writes into
// the array. Here a slot is attached while a PerfReader is open for that
// CPU: the reader allocates the CPU's ring off-heap and stores it in the
// slot, Close or Pause empties it. The CPUs are the collection's runners.
//
// Each ring has the kernel's layout where readers see it: a first page
// whose data_head and data_tail sit where struct perf_event_mmap_page has
// them, then a power-of-two data area of records, each a perf_event_header
// {type, misc, size} followed by the body. Samples are PERF_RECORD_SAMPLE
// with PERF_SAMPLE_RAW (a u32 size, then the data, zero-padded so the
// record is a multiple of 8 bytes); a sample that does not fit is counted,
// and the count is written as a PERF_RECORD_LOST before the next sample
// that fits, as perf_output_begin does.
type PerfEvents struct {
	header
	spec  Spec
	ncpu  int
	slots []atomic.Pointer[perfRing]
	mu    sync.Mutex // attaching and detaching slots
}

// Perf event array constants, as in the kernel's UAPI.
const (
	// PerfCurrentCPU is BPF_F_CURRENT_CPU: output to the running CPU's slot.
	PerfCurrentCPU = 0xffffffff
	// PerfIndexMask is BPF_F_INDEX_MASK: the slot index in the flags.
	PerfIndexMask = 0xffffffff
	// PerfCtxLenMask is BPF_F_CTXLEN_MASK: the number of packet bytes to
	// append after the sample, in the upper 32 bits of the flags.
	PerfCtxLenMask = 0xfffff << 32

	// PerfRecordLost and PerfRecordSample are the perf_event_header types
	// PERF_RECORD_LOST and PERF_RECORD_SAMPLE.
	PerfRecordLost   = 2
	PerfRecordSample = 9

	// Offsets of data_head and data_tail in struct perf_event_mmap_page.
	perfDataHead = 1024
	perfDataTail = 1032
	perfDataOff  = 1040
	perfDataSize = 1048

	perfHeaderSize = 8  // struct perf_event_header
	perfLostSize   = 24 // header, id, lost
	perfMaxRecord  = 0xffff
)

func newPerfEventArray(spec Spec, opts Options) (*PerfEvents, error) {
	a := &PerfEvents{spec: spec, ncpu: opts.NumCPU, slots: make([]atomic.Pointer[perfRing], spec.MaxEntries)}
	if err := a.header.init(a); err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	return a, nil
}

// Spec returns the spec the array was created with.
func (a *PerfEvents) Spec() Spec { return a.spec }

// Memory is empty: programs reach the rings only through helpers.
func (a *PerfEvents) Memory() []vm.Region { return nil }

// Output writes a sample of meta followed by ctx (the packet bytes the
// skb and xdp variants append) to the ring of the slot index selects, for
// a program running on cpu: bpf_perf_event_output after its flag checks.
// The errors are the kernel's, in its order: ErrFull (E2BIG) for an index
// past max_entries, ErrKeyNotExist (ENOENT) for an empty slot,
// ErrNotSupported (EOPNOTSUPP) for another CPU's ring (a perf event only
// takes output on its own CPU), ErrNoSpace (ENOSPC) when the ring is full
// (the sample is counted as lost). A sample too large for a record's
// 16-bit size is counted as lost, and Output returns nil as the kernel does
// (see perfRing.write).
func (a *PerfEvents) Output(cpu int, index uint64, meta, ctx []byte) error {
	if index == PerfCurrentCPU {
		index = uint64(cpu)
	}
	if index >= uint64(len(a.slots)) {
		return ErrFull
	}
	r := a.slots[index].Load()
	if r == nil {
		return ErrKeyNotExist
	}
	if r.cpu != cpu {
		return ErrNotSupported
	}
	return r.write(meta, ctx)
}

// attach stores r in slot i, replacing what was there, as an update with a
// new perf event fd does.
func (a *PerfEvents) attach(i int, r *perfRing) {
	a.mu.Lock()
	a.slots[i].Store(r)
	a.mu.Unlock()
}

// detach empties slot i if it holds r.
func (a *PerfEvents) detach(i int, r *perfRing) {
	a.mu.Lock()
	a.slots[i].CompareAndSwap(r, nil)
	a.mu.Unlock()
}

// Lookup gives programs nothing: the verifier allows only output helpers.
func (a *PerfEvents) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update is not supported from programs.
func (a *PerfEvents) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("update of a perf_event_array: %w", ErrNotSupported)
}

// LookupBytes is not supported, as the kernel's lookup of a perf event
// array (ENOTSUPP).
func (a *PerfEvents) LookupBytes(key, value []byte) error {
	return fmt.Errorf("lookup in a perf_event_array: %w", ErrNotSupported)
}

// UpdateBytes is not supported: in the kernel it stores a perf event fd;
// here a PerfReader attaches the slots.
func (a *PerfEvents) UpdateBytes(key, value []byte, flags uint64) error {
	return fmt.Errorf("update of a perf_event_array: slots are attached by a perf reader: %w", ErrNotSupported)
}

// LookupAndDelete is not supported, as in the kernel.
func (a *PerfEvents) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a perf_event_array: %w", ErrNotSupported)
}

// Delete empties a slot (Go side; the verifier keeps programs from it):
// programs writing to it get ENOENT until a reader attaches again, as after
// the kernel's delete. ErrKeyNotExist when it is empty already.
func (a *PerfEvents) Delete(key unsafe.Pointer) error {
	i := *(*uint32)(key)
	if i >= uint32(len(a.slots)) {
		return fmt.Errorf("perf_event_array index %d: %w", i, ErrFull)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots[i].Swap(nil) == nil {
		return fmt.Errorf("perf_event_array index %d: %w", i, ErrKeyNotExist)
	}
	return nil
}

// NextKey walks the indexes as an array does.
func (a *PerfEvents) NextKey(key, next []byte) error {
	return arrayNextKey(a.spec.MaxEntries, key, next)
}

// Close drops the creator's reference and, as the kernel does when the
// map's file is released, empties the slots unless the map has
// FlagPreserveElems; open readers then read what is left.
func (a *PerfEvents) Close() error {
	if a.spec.Flags&FlagPreserveElems == 0 && !a.Closed() {
		a.mu.Lock()
		for i := range a.slots {
			a.slots[i].Store(nil)
		}
		a.mu.Unlock()
	}
	return a.header.Close()
}

func (a *PerfEvents) free() error { return nil }

// perfRing is one CPU's ring.
type perfRing struct {
	cpu  int
	mem  *vm.Mem
	base uint64 // the page holding data_head and data_tail
	data uint64
	mask uint64
	w    *waker
	head uint64 // the reader's snapshot of data_head

	mu           sync.Mutex // producers
	lost         uint64     // samples lost since the last lost record
	events       int        // samples since the reader last waited
	watermark    uint64
	wakeupEvents int
}

func newPerfRing(cpu int, size uint64, w *waker, watermark uint64, wakeupEvents int) (*perfRing, error) {
	page := uint64(os.Getpagesize())
	mem, err := vm.Alloc(int(page + size))
	if err != nil {
		return nil, err
	}
	r := &perfRing{cpu: cpu, mem: mem, base: mem.Addr(), data: mem.Addr() + page, mask: size - 1, w: w, watermark: watermark, wakeupEvents: wakeupEvents}
	*r.word(perfDataOff) = page
	*r.word(perfDataSize) = size
	return r, nil
}

func (r *perfRing) word(off uint64) *uint64 { return (*uint64)(vm.Ptr(r.base + off)) }

// put copies b into the data area at position pos, wrapping at the end.
func (r *perfRing) put(pos uint64, b []byte) {
	off := pos & r.mask
	n := copy(bytesAt(r.data+off, r.mask+1-off), b)
	copy(bytesAt(r.data, r.mask+1), b[n:])
}

// get copies len(b) bytes from position pos into b.
func (r *perfRing) get(pos uint64, b []byte) {
	off := pos & r.mask
	n := copy(b, bytesAt(r.data+off, r.mask+1-off))
	copy(b[n:], bytesAt(r.data, r.mask+1))
}

var zeroPad [8]byte

// write appends a sample record holding meta then ctx.
func (r *perfRing) write(meta, ctx []byte) error {
	sum := uint64(len(meta)) + uint64(len(ctx))
	total := (perfHeaderSize + 4 + sum + 7) &^ 7
	r.mu.Lock()
	if total > perfMaxRecord {
		// perf_event_header.size is 16 bits. The kernel returns 0 and
		// writes a record whose size wrapped, which readers cannot
		// parse; bpfvm returns 0 too, and counts the sample as lost.
		r.lost++
		r.mu.Unlock()
		return nil
	}
	head := atomic.LoadUint64(r.word(perfDataHead))
	tail := atomic.LoadUint64(r.word(perfDataTail))
	need := total
	if r.lost != 0 {
		need += perfLostSize
	}
	// CIRC_SPACE: a full ring keeps one byte free, so head never catches
	// up with tail.
	if (tail-head-1)&r.mask < need || need > r.mask {
		r.lost++
		r.mu.Unlock()
		return ErrNoSpace
	}
	var hdr [perfLostSize]byte
	if r.lost != 0 {
		binary.NativeEndian.PutUint32(hdr[0:], PerfRecordLost)
		binary.NativeEndian.PutUint16(hdr[6:], perfLostSize)
		binary.NativeEndian.PutUint64(hdr[8:], uint64(r.cpu)) // the event id
		binary.NativeEndian.PutUint64(hdr[16:], r.lost)
		r.put(head, hdr[:])
		head += perfLostSize
		r.lost = 0
	}
	binary.NativeEndian.PutUint32(hdr[0:], PerfRecordSample)
	binary.NativeEndian.PutUint16(hdr[4:], 0)
	binary.NativeEndian.PutUint16(hdr[6:], uint16(total))
	binary.NativeEndian.PutUint32(hdr[8:], uint32(total-perfHeaderSize-4))
	r.put(head, hdr[:12])
	r.put(head+12, meta)
	r.put(head+12+uint64(len(meta)), ctx)
	r.put(head+12+sum, zeroPad[:total-12-sum])
	head += total
	atomic.StoreUint64(r.word(perfDataHead), head)
	r.events++
	wake := r.wakeupEvents == 0 && head-tail >= r.watermark || r.wakeupEvents > 0 && r.events >= r.wakeupEvents
	if wake {
		r.events = 0
	}
	r.mu.Unlock()
	if wake {
		r.w.signal()
	}
	return nil
}

// waker wakes goroutines waiting for data: the readiness of the reader's
// perf fds in the kernel (epoll).
type waker struct {
	woken   atomic.Bool // a ring reached its watermark since the reader looked
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{} // closed to wake
}

func newWaker() *waker { return &waker{ch: make(chan struct{})} }

func (w *waker) waiting() bool { return w.waiters.Load() != 0 }

// wait announces a waiter and returns the channel to wait on; the caller
// looks for data once more before waiting and calls done after.
func (w *waker) wait() <-chan struct{} {
	w.mu.Lock()
	ch := w.ch
	w.mu.Unlock()
	w.waiters.Add(1)
	return ch
}

func (w *waker) done() { w.waiters.Add(-1) }

// signal marks the reader woken and wakes it if it waits.
func (w *waker) signal() {
	if !w.woken.Load() {
		w.woken.Store(true)
	}
	if w.waiting() {
		w.notify()
	}
}

func (w *waker) notify() {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

// ErrUnknownEvent is a record of a type other than sample and lost in a
// perf ring. bpfvm's producers write none; the error exists for readers'
// completeness (cilium/ebpf's perf.IsUnknownEvent).
var ErrUnknownEvent = errors.New("unknown perf event")

// PerfReaderOptions configure a PerfReader, as cilium/ebpf's
// perf.ReaderOptions.
type PerfReaderOptions struct {
	// Watermark wakes a waiting reader once a ring holds this many unread
	// bytes; 0 means 1.
	Watermark int
	// WakeupEvents, when positive, wakes it after this many samples
	// instead; it excludes Watermark.
	WakeupEvents int
}

// PerfRecord is a record read from a PerfReader.
type PerfRecord struct {
	CPU int
	// Sample is the raw sample, including the kernel's zero padding.
	Sample []byte
	// Lost is the number of samples lost before this point (a lost record,
	// whose Sample is empty).
	Lost uint64
	// Remaining is the unread bytes left in the CPU's ring.
	Remaining int
}

// PerfReader reads the rings of a PerfEvents map, one per CPU it has a
// slot for. Read is for one goroutine at a time; Close, Pause and Resume
// may be called from any.
type PerfReader struct {
	a      *PerfEvents
	rings  []*perfRing
	size   int
	w      *waker
	mu     sync.Mutex // reads and teardown
	pause  sync.Mutex // Pause and Resume
	closed chan struct{}
	once   sync.Once
	flush  atomic.Bool

	pending    []*perfRing // rings to read, up to their head snapshots
	pendingErr error       // the deadline or flush to report once they are
}

// NewReader attaches a ring of perCPUBuffer bytes (rounded up to a power
// of two number of pages) for each CPU the array has a slot for.
func (a *PerfEvents) NewReader(perCPUBuffer int, opts PerfReaderOptions) (*PerfReader, error) {
	if perCPUBuffer < 1 {
		return nil, fmt.Errorf("perf reader: buffer size %d: %w", perCPUBuffer, ErrInvalid)
	}
	page := os.Getpagesize()
	pages := 1
	for pages*page < perCPUBuffer {
		pages <<= 1
		if pages > 1<<20 {
			return nil, fmt.Errorf("perf reader: buffer size %d: %w", perCPUBuffer, ErrFull)
		}
	}
	size := pages * page
	if opts.Watermark > 0 && opts.WakeupEvents > 0 {
		return nil, fmt.Errorf("perf reader: WakeupEvents and Watermark are mutually exclusive: %w", ErrInvalid)
	}
	watermark := max(opts.Watermark, 1)
	if watermark >= size {
		return nil, fmt.Errorf("perf reader: watermark %d not below the buffer size %d: %w", watermark, size, ErrInvalid)
	}
	if !a.Acquire() {
		return nil, fmt.Errorf("perf reader of %s: %w", a.spec.Name, ErrClosed)
	}
	rd := &PerfReader{a: a, size: size, w: newWaker(), closed: make(chan struct{})}
	n := min(a.ncpu, len(a.slots))
	for cpu := range n {
		r, err := newPerfRing(cpu, uint64(size), rd.w, uint64(watermark), opts.WakeupEvents)
		if err != nil {
			rd.teardown()
			return nil, fmt.Errorf("perf reader of %s: cpu %d: %w", a.spec.Name, cpu, err)
		}
		rd.rings = append(rd.rings, r)
	}
	for cpu, r := range rd.rings {
		a.attach(cpu, r)
	}
	return rd, nil
}

// BufferSize is the size of each CPU's ring in bytes.
func (rd *PerfReader) BufferSize() int { return rd.size }

// readFrom reads one record from r, up to the reader's snapshot of its
// head. It reports false when r holds no more.
func (rd *PerfReader) readFrom(r *perfRing, rec *PerfRecord) (bool, error) {
	tail := atomic.LoadUint64(r.word(perfDataTail))
	head := r.head
	if tail == head {
		return false, nil
	}
	var hdr [perfLostSize]byte
	r.get(tail, hdr[:perfHeaderSize])
	typ := binary.NativeEndian.Uint32(hdr[0:])
	size := uint64(binary.NativeEndian.Uint16(hdr[6:]))
	if size < perfHeaderSize || size > head-tail {
		return false, fmt.Errorf("perf ring of cpu %d: record of %d bytes: %w", r.cpu, size, ErrInvalid)
	}
	rec.CPU, rec.Lost, rec.Sample = r.cpu, 0, rec.Sample[:0]
	switch typ {
	case PerfRecordSample:
		r.get(tail+perfHeaderSize, hdr[:4])
		n := uint64(binary.NativeEndian.Uint32(hdr[:4]))
		if n > size-perfHeaderSize-4 {
			return false, fmt.Errorf("perf ring of cpu %d: sample of %d bytes in a record of %d: %w", r.cpu, n, size, ErrInvalid)
		}
		if uint64(cap(rec.Sample)) < n {
			rec.Sample = make([]byte, n)
		}
		rec.Sample = rec.Sample[:n]
		r.get(tail+perfHeaderSize+4, rec.Sample)
	case PerfRecordLost:
		r.get(tail, hdr[:])
		rec.Lost = binary.NativeEndian.Uint64(hdr[16:])
	default:
		// Skipped, as cilium/ebpf's reader does, with an error saying so.
		atomic.StoreUint64(r.word(perfDataTail), tail+size)
		return false, fmt.Errorf("perf ring of cpu %d: record type %d: %w", r.cpu, typ, ErrUnknownEvent)
	}
	tail += size
	// Only now may the producer reuse the space.
	atomic.StoreUint64(r.word(perfDataTail), tail)
	rec.Remaining = int(head - tail)
	return true, nil
}

// ReadInto reads the next record into rec, reusing rec.Sample's storage.
// As cilium/ebpf's reader does with epoll, it waits until a ring reaches
// its watermark (or wakeup events), Flush, the deadline (none when zero)
// or Close; then it reads every ring up to the head it saw, and once they
// are drained returns the deadline's error (wrapping
// os.ErrDeadlineExceeded) or the flush's (ErrFlushed), if that is what
// ended the wait. After Close it returns an error wrapping ErrClosed.
func (rd *PerfReader) ReadInto(rec *PerfRecord, deadline time.Time) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	var timer <-chan time.Time
	for {
		if rd.isClosed() {
			return fmt.Errorf("perf reader: %w", ErrClosed)
		}
		if len(rd.pending) == 0 {
			if err := rd.pendingErr; err != nil {
				rd.pendingErr = nil
				return err
			}
			if err := rd.wait(deadline, &timer); errors.Is(err, ErrClosed) {
				return err
			} else if err != nil {
				rd.pendingErr = err
			}
			// Waking costs; read every ring, as cilium/ebpf does.
			rd.w.woken.Store(false)
			for _, r := range rd.rings {
				r.head = atomic.LoadUint64(r.word(perfDataHead))
				rd.pending = append(rd.pending, r)
			}
		}
		r := rd.pending[len(rd.pending)-1]
		ok, err := rd.readFrom(r, rec)
		if err != nil {
			return err
		}
		if !ok {
			rd.pending = rd.pending[:len(rd.pending)-1]
			continue
		}
		return nil
	}
}

// wait blocks until a producer signals, Flush, the deadline or Close.
func (rd *PerfReader) wait(deadline time.Time, timer *<-chan time.Time) error {
	for {
		if rd.isClosed() {
			return fmt.Errorf("perf reader: %w", ErrClosed)
		}
		if rd.flush.Swap(false) {
			return fmt.Errorf("perf reader: %w", ErrFlushed)
		}
		if rd.w.woken.Load() {
			return nil
		}
		if *timer == nil && !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return fmt.Errorf("perf reader: %w", os.ErrDeadlineExceeded)
			}
			t := time.NewTimer(d)
			defer t.Stop()
			*timer = t.C
		}
		// Announce the wait, then look again: a producer or Flush either
		// sees the announcement or acted before the second look.
		wake := rd.w.wait()
		if rd.flush.Load() || rd.w.woken.Load() {
			rd.w.done()
			continue
		}
		select {
		case <-wake:
		case <-rd.closed:
		case <-*timer:
			rd.w.done()
			return fmt.Errorf("perf reader: %w", os.ErrDeadlineExceeded)
		}
		rd.w.done()
	}
}

// Flush makes a blocked ReadInto, or the next one, return the records the
// rings hold and then an error wrapping ErrFlushed, once.
func (rd *PerfReader) Flush() error {
	if rd.isClosed() {
		return fmt.Errorf("perf reader: %w", ErrClosed)
	}
	rd.flush.Store(true)
	rd.w.notify()
	return nil
}

// Pause empties the reader's slots: programs get ENOENT, as after
// cilium/ebpf's Pause; with nothing written, reads wait for the deadline
// (then return what the rings hold) or Resume and new samples.
func (rd *PerfReader) Pause() error {
	rd.pause.Lock()
	defer rd.pause.Unlock()
	if rd.isClosed() {
		return fmt.Errorf("perf reader: %w", ErrClosed)
	}
	for cpu, r := range rd.rings {
		rd.a.detach(cpu, r)
	}
	return nil
}

// Resume attaches the reader's slots again.
func (rd *PerfReader) Resume() error {
	rd.pause.Lock()
	defer rd.pause.Unlock()
	if rd.isClosed() {
		return fmt.Errorf("perf reader: %w", ErrClosed)
	}
	for cpu, r := range rd.rings {
		rd.a.attach(cpu, r)
	}
	return nil
}

func (rd *PerfReader) isClosed() bool {
	select {
	case <-rd.closed:
		return true
	default:
		return false
	}
}

// Close wakes a blocked read with ErrClosed, empties the reader's slots and
// frees its rings once no run can be writing to them. Closing twice does
// nothing.
func (rd *PerfReader) Close() error {
	first := false
	rd.once.Do(func() {
		first = true
		rd.pause.Lock()
		close(rd.closed)
		rd.pause.Unlock()
	})
	if !first {
		return nil
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.teardown()
	return nil
}

// teardown detaches and frees the rings and drops the map reference.
func (rd *PerfReader) teardown() {
	rings := rd.rings
	rd.rings, rd.pending = nil, nil
	for cpu, r := range rings {
		rd.a.detach(cpu, r)
	}
	// A run that loaded a slot before it was emptied may still write.
	Defer(func() {
		for _, r := range rings {
			_ = r.mem.Free()
		}
	})
	rd.a.Release()
}
