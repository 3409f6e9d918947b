package ringbuf_test

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	ebpfringbuf "github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/ringbuf"
)

const object = "../testdata/helpers_maps.o"

// args is the packet of the ring program: an Ethernet header, then struct
// rb_args asking for an output of (n & 31) + 1 bytes.
func args(op, n uint32) []byte {
	p := make([]byte, 14+48)
	binary.NativeEndian.PutUint32(p[14:], op)
	binary.NativeEndian.PutUint32(p[18:], n)
	for i := range 32 {
		p[30+i] = byte(i + 1)
	}
	return p
}

// trace outputs records of 1, 9 and 32 bytes and reads them: the samples,
// Remaining after each, and AvailableBytes before and after.
type trace struct {
	samples   [][]byte
	remaining []int
	avail     [2]int
}

type reader interface {
	SetDeadline(time.Time)
	AvailableBytes() int
}

func record(t *testing.T, run func([]byte) int32, rd reader, read func() ([]byte, int, error)) trace {
	t.Helper()
	var tr trace
	for _, n := range []uint32{0, 8, 31} {
		if ret := run(args(0, n)); ret != 0 {
			t.Fatalf("output: %d", ret)
		}
	}
	tr.avail[0] = rd.AvailableBytes()
	rd.SetDeadline(time.Now().Add(20 * time.Millisecond))
	for {
		s, rem, err := read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tr.samples = append(tr.samples, append([]byte(nil), s...))
		tr.remaining = append(tr.remaining, rem)
	}
	tr.avail[1] = rd.AvailableBytes()
	return tr
}

// TestReader compares the reader with cilium/ebpf's on the kernel's ring
// buffer, then checks ReadInto reuse, deadlines and Close.
func TestReader(t *testing.T) {
	spec, err := loader.LoadCollectionSpec(object)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd, err := ringbuf.NewReader(c.Maps["rb"])
	if err != nil {
		t.Fatal(err)
	}
	var rec ringbuf.Record
	got := record(t, func(p []byte) int32 {
		res, err := c.Programs["ring"].Execute(&bpfvm.RunOptions{Data: p})
		if err != nil {
			t.Fatal(err)
		}
		return int32(res.R0)
	}, rd, func() ([]byte, int, error) {
		err := rd.ReadInto(&rec)
		return rec.RawSample, rec.Remaining, err
	})
	if len(got.samples) != 3 || len(got.samples[0]) != 1 || len(got.samples[1]) != 9 || len(got.samples[2]) != 32 || got.samples[2][31] != 32 {
		t.Errorf("samples %x", got.samples)
	}
	if got.avail != [2]int{16 + 24 + 40, 0} || got.remaining[0] != 64 || got.remaining[2] != 0 {
		t.Errorf("available %v, remaining %v", got.avail, got.remaining)
	}
	if rd.BufferSize() != 4096 {
		t.Errorf("buffer size %d", rd.BufferSize())
	}

	if os.Getuid() == 0 && rlimit.RemoveMemlock() == nil {
		if kc, err := ebpf.NewCollection(spec); err == nil {
			defer kc.Close()
			kr, err := ebpfringbuf.NewReader(kc.Maps["rb"])
			if err != nil {
				t.Fatal(err)
			}
			defer kr.Close()
			want := record(t, func(p []byte) int32 {
				ret, err := kc.Programs["ring"].Run(&ebpf.RunOptions{Data: p})
				if err != nil {
					t.Fatal(err)
				}
				return int32(ret)
			}, kr, func() ([]byte, int, error) {
				r, err := kr.Read()
				return r.RawSample, r.Remaining, err
			})
			if len(want.samples) != len(got.samples) || want.avail != got.avail {
				t.Errorf("kernel %+v\nbpfvm  %+v", want, got)
			}
			for i := range min(len(want.samples), len(got.samples)) {
				if string(want.samples[i]) != string(got.samples[i]) || want.remaining[i] != got.remaining[i] {
					t.Errorf("record %d: kernel % x (remaining %d), bpfvm % x (remaining %d)", i, want.samples[i], want.remaining[i], got.samples[i], got.remaining[i])
				}
			}
		} else {
			t.Logf("kernel skipped: %v", err)
		}
	}

	t.Run("ReadInto reuses", func(t *testing.T) {
		for range 2 {
			if _, err := c.Programs["ring"].Execute(&bpfvm.RunOptions{Data: args(0, 3)}); err != nil {
				t.Fatal(err)
			}
		}
		rec := ringbuf.Record{RawSample: make([]byte, 0, 64)}
		first := &rec.RawSample[:1][0]
		for range 2 {
			if err := rd.ReadInto(&rec); err != nil {
				t.Fatal(err)
			}
			if &rec.RawSample[0] != first || len(rec.RawSample) != 4 {
				t.Errorf("new storage or wrong sample % x", rec.RawSample)
			}
		}
	})
	t.Run("flush", func(t *testing.T) {
		rd.SetDeadline(time.Time{})
		done := make(chan error)
		go func() {
			_, err := rd.Read()
			done <- err
		}()
		time.Sleep(10 * time.Millisecond)
		if err := rd.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, ringbuf.ErrFlushed) {
			t.Fatalf("blocked read after flush: %v, want ErrFlushed", err)
		}
		if _, err := c.Programs["ring"].Execute(&bpfvm.RunOptions{Data: args(0, 3)}); err != nil {
			t.Fatal(err)
		}
		if err := rd.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, want := range []error{nil, ringbuf.ErrFlushed} {
			if _, err := rd.Read(); !errors.Is(err, want) && (err != nil || want != nil) {
				t.Fatalf("read after flush: %v, want %v", err, want)
			}
		}
		rd.SetDeadline(time.Now().Add(5 * time.Millisecond))
		if _, err := rd.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("second read after flush: %v", err)
		}
	})
	t.Run("close unblocks", func(t *testing.T) {
		rd.SetDeadline(time.Time{})
		done := make(chan error)
		go func() {
			_, err := rd.Read()
			done <- err
		}()
		time.Sleep(10 * time.Millisecond)
		if err := rd.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ringbuf.ErrClosed) {
				t.Errorf("blocked read: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock Read")
		}
		if _, err := rd.Read(); !errors.Is(err, ringbuf.ErrClosed) {
			t.Errorf("read after close: %v", err)
		}
		if err := rd.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		if _, err := ringbuf.NewReader(c.Maps["queue"]); err == nil {
			t.Error("reader of a queue")
		}
		m := c.Maps["rb"]
		m.Close()
		if _, err := ringbuf.NewReader(m); !errors.Is(err, ringbuf.ErrClosed) {
			t.Errorf("reader of a closed map: %v", err)
		}
	})
}
