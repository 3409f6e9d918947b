package maps

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

func newRing(t testing.TB, size uint32) *RingBuffer {
	t.Helper()
	m := newTestMap(t, Spec{Name: "rb", Type: RingBuf, MaxEntries: size}, Options{})
	return m.(*RingBuffer)
}

func sample(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

func TestRingBufRecordFormat(t *testing.T) {
	page := os.Getpagesize()
	r := newRing(t, uint32(page))
	p := r.Reserve(5)
	if p == nil {
		t.Fatal("reserve failed")
	}
	hdr := unsafe.Add(p, -RingHeaderSize)
	if l := *(*uint32)(hdr); l != 5|RingBusyBit {
		t.Errorf("reserved header len %#x", l)
	}
	// pg_off leads back to the ring's first page.
	pgOff := *(*uint32)(unsafe.Add(hdr, 4))
	if base := (uint64(uintptr(hdr)) &^ uint64(page-1)) - uint64(pgOff)*uint64(page); base != r.base {
		t.Errorf("pg_off %d leads to %#x, want %#x", pgOff, base, r.base)
	}
	copy(sample(p, 5), "hello")
	if got := r.Query(RingProdPos); got != 16 {
		t.Errorf("producer position %d, want 16 (8-byte header + 5 rounded up)", got)
	}
	if got := r.Query(RingAvailData); got != 16 {
		t.Errorf("available %d", got)
	}
	r.Commit(p, false)
	if l := *(*uint32)(hdr); l != 5 {
		t.Errorf("committed header len %#x", l)
	}
	rd := r.NewReader()
	rec, err := rd.Read()
	if err != nil || string(rec) != "hello" {
		t.Errorf("read %q, %v", rec, err)
	}
	if got := r.Query(RingConsPos); got != 16 {
		t.Errorf("consumer position %d", got)
	}
	if got := r.Query(RingRingSize); got != uint64(page) {
		t.Errorf("ring size %d", got)
	}
	if r.Query(99) != 0 {
		t.Error("unknown query flag")
	}
	if rd.Available() != 0 {
		t.Errorf("available %d after reading everything", rd.Available())
	}
}

func TestRingBufFullAndWrap(t *testing.T) {
	page := os.Getpagesize()
	r := newRing(t, uint32(page))
	rd := r.NewReader()
	// A record as large as the ring never fits; one of size-16 bytes of
	// sample does (the producer stays less than the ring ahead).
	if r.Reserve(uint64(page)) != nil {
		t.Error("reserved a record larger than the ring")
	}
	if err := r.Output(make([]byte, page-8)); !errors.Is(err, ErrAgain) {
		t.Errorf("output filling the ring exactly: %v", err)
	}
	big := bytes.Repeat([]byte{1}, page-16)
	if err := r.Output(big); err != nil {
		t.Fatalf("output of %d: %v", len(big), err)
	}
	if err := r.Output([]byte{1}); !errors.Is(err, ErrAgain) {
		t.Errorf("output into a full ring: %v", err)
	}
	if rec, err := rd.Read(); err != nil || !bytes.Equal(rec, big) {
		t.Fatalf("read: %d bytes, %v", len(rec), err)
	}
	// The next records start near the end and wrap around it; samples
	// are contiguous thanks to the double mapping.
	for i := range 20 {
		data := bytes.Repeat([]byte{byte(i)}, 100+i*37)
		p := r.Reserve(uint64(len(data)))
		if p == nil {
			t.Fatalf("record %d: no room", i)
		}
		copy(sample(p, len(data)), data)
		r.Commit(p, false)
		rec, err := rd.Read()
		if err != nil || !bytes.Equal(rec, data) {
			t.Fatalf("record %d across position %d: %d bytes, %v", i, r.Query(RingConsPos), len(rec), err)
		}
	}
	if r.Query(RingProdPos) < uint64(page) {
		t.Error("test did not wrap")
	}
}

func TestRingBufDiscardAndOrder(t *testing.T) {
	r := newRing(t, uint32(os.Getpagesize()))
	rd := r.NewReader()
	a, b, c := r.Reserve(1), r.Reserve(2), r.Reserve(3)
	sample(a, 1)[0], sample(c, 3)[0] = 'a', 'c'
	// Committed out of order: c and the discarded b wait behind a.
	r.Commit(c, false)
	r.Commit(b, true)
	if *(*uint32)(unsafe.Add(b, -8)) != 2|RingDiscardBit {
		t.Errorf("discarded header %#x", *(*uint32)(unsafe.Add(b, -8)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if rec, err := rd.ReadContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read past a busy record: %q, %v", rec, err)
	}
	r.Commit(a, false)
	for _, want := range []string{"a", "c\x00\x00"} {
		if rec, err := rd.Read(); err != nil || string(rec) != want {
			t.Errorf("read %q, %v, want %q", rec, err, want)
		}
	}
}

func TestRingBufReaderBlocksAndCloses(t *testing.T) {
	r := newRing(t, uint32(os.Getpagesize()))
	rd := r.NewReader()
	got := make(chan []byte)
	go func() {
		rec, _ := rd.Read()
		got <- rec
	}()
	select {
	case rec := <-got:
		t.Fatalf("read %q from an empty ring", rec)
	case <-time.After(20 * time.Millisecond):
	}
	r.Output([]byte("x"))
	select {
	case rec := <-got:
		if string(rec) != "x" {
			t.Errorf("read %q", rec)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader not woken by a commit")
	}
	errc := make(chan error)
	go func() {
		_, err := rd.Read()
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	rd.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("read after close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader not woken by Close")
	}
	// Closing the map wakes its readers too.
	rd2 := r.NewReader()
	go func() {
		_, err := rd2.Read()
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	r.Close()
	if err := <-errc; !errors.Is(err, os.ErrClosed) {
		t.Errorf("read after map close: %v", err)
	}
}

func TestRingBufMapOps(t *testing.T) {
	r := newRing(t, uint32(os.Getpagesize()))
	var k uint32
	if r.Lookup(unsafe.Pointer(&k), 0) != nil {
		t.Error("lookup")
	}
	for name, err := range map[string]error{
		"update":       r.Update(nil, nil, 0, 0),
		"delete":       r.Delete(nil),
		"lookup bytes": r.LookupBytes(nil, nil),
		"update bytes": r.UpdateBytes(nil, nil, 0),
		"next key":     r.NextKey(nil, nil),
	} {
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRingBufConcurrent(t *testing.T) {
	const producers, perProducer = 4, 3000
	r := newRing(t, 16*uint32(os.Getpagesize()))
	rd := r.NewReader()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; {
				n := 8 + (i*7+p)%50
				s := r.Reserve(uint64(n))
				if s == nil {
					time.Sleep(10 * time.Microsecond) // full: let the reader catch up
					continue
				}
				b := sample(s, n)
				binary.LittleEndian.PutUint32(b, uint32(p))
				binary.LittleEndian.PutUint32(b[4:], uint32(i))
				discard := i%10 == 9
				r.Commit(s, discard)
				i++
			}
		}()
	}
	seen := make([][]bool, producers)
	for p := range seen {
		seen[p] = make([]bool, perProducer)
	}
	want := producers * (perProducer - perProducer/10)
	for range want {
		rec, err := rd.Read()
		if err != nil {
			t.Fatal(err)
		}
		p, i := binary.LittleEndian.Uint32(rec), binary.LittleEndian.Uint32(rec[4:])
		if int(p) >= producers || int(i) >= perProducer || i%10 == 9 {
			t.Fatalf("bad record %d/%d", p, i)
		}
		if seen[p][i] {
			t.Fatalf("record %d/%d twice", p, i)
		}
		if len(rec) != 8+(int(i)*7+int(p))%50 {
			t.Fatalf("record %d/%d of %d bytes", p, i, len(rec))
		}
		seen[p][i] = true
	}
	wg.Wait()
	if n := rd.Available(); n != 0 {
		// Only discarded records may remain.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if rec, err := rd.ReadContext(ctx); err == nil {
			t.Errorf("extra record %x", rec)
		}
	}
}

// A record header overwritten with garbage (as a checked program's wild
// write into the data area can) never makes the reader copy or skip past
// the producer position: the records produced are dropped and the ring
// keeps working.
func TestRingBufCorruptHeader(t *testing.T) {
	for _, l := range []uint32{1<<30 - 1, 4096, 4089, RingDiscardBit | 1<<29, RingDiscardBit | 4096} {
		r := newRing(t, uint32(os.Getpagesize()))
		if err := r.Output([]byte("first")); err != nil {
			t.Fatal(err)
		}
		if err := r.Output([]byte("second")); err != nil {
			t.Fatal(err)
		}
		*(*uint32)(vm.Ptr(r.data)) = l
		if rec, ok := r.consume(nil); ok {
			t.Errorf("len %#x: read %q from a corrupt header", l, rec)
		}
		if c, p := r.Query(RingConsPos), r.Query(RingProdPos); c != p {
			t.Errorf("len %#x: consumer %d, producer %d after a corrupt header", l, c, p)
		}
		if err := r.Output([]byte("third")); err != nil {
			t.Fatalf("len %#x: output after a corrupt header: %v", l, err)
		}
		if rec, ok := r.consume(nil); !ok || string(rec) != "third" {
			t.Errorf("len %#x: read %q %v after a corrupt header, want third", l, rec, ok)
		}
	}
}
