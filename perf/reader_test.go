//go:build linux

package perf_test

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	ebpfperf "github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/perf"
)

const object = "../testdata/helpers_perf.o"

// output is one program run's outcome: the helper's result.
type output func(t *testing.T) int32

// setup loads the test object into bpfvm with ncpu runners, with the
// program outputting size-byte samples.
func setup(t *testing.T, ncpu int, size uint32) (*bpfvm.Collection, output) {
	t.Helper()
	spec, err := loader.LoadCollectionSpec(object)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: ncpu})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Maps["config"].Put(uint32(0), config{Flags: currentCPU, Size: size}); err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 60)
	return c, func(t *testing.T) int32 {
		res, err := c.Programs["perf_tc"].Execute(&bpfvm.RunOptions{Data: pkt})
		if err != nil {
			t.Error(err)
		}
		return int32(res.R0)
	}
}

// kernel loads the test object into the kernel with the calling goroutine
// pinned to CPU 0, or skips.
func kernel(t *testing.T, size uint32) (*ebpf.Collection, output) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("kernel: not root")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skip(err)
	}
	spec, err := loader.LoadCollectionSpec(object)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Skipf("kernel: %v", err)
	}
	t.Cleanup(c.Close)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if err := pinToCPU0(); err != nil {
		t.Skip(err)
	}
	if err := c.Maps["config"].Put(uint32(0), config{Flags: currentCPU, Size: size}); err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 60)
	return c, func(t *testing.T) int32 {
		ret, err := c.Programs["perf_tc"].Run(&ebpf.RunOptions{Data: pkt})
		if err != nil {
			t.Error(err)
		}
		return int32(ret)
	}
}

// lostTrace fills a one-page ring, reads it, outputs once more and reads
// again: what a reader sees of a full ring.
type lostTrace struct {
	accepted, refused int
	records           []uint64 // per record: LostSamples, or 0 for a sample
	remaining         int      // after the first record
}

func traceLost(t *testing.T, out output, read func() (uint64, int, error)) lostTrace {
	var tr lostTrace
	for {
		ret := out(t)
		if ret == -28 { // ENOSPC
			break
		}
		if ret != 0 {
			t.Fatalf("output: %d", ret)
		}
		tr.accepted++
		if tr.accepted > 10000 {
			t.Fatal("the ring never fills")
		}
	}
	for range 5 {
		if out(t) != -28 {
			t.Fatal("the full ring took a sample")
		}
	}
	tr.refused = 6
	for i := 0; ; i++ {
		lost, rem, err := read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			tr.remaining = rem
		}
		tr.records = append(tr.records, lost)
	}
	if ret := out(t); ret != 0 {
		t.Fatalf("output after reading: %d", ret)
	}
	for range 2 {
		lost, _, err := read()
		if err != nil {
			t.Fatal(err)
		}
		tr.records = append(tr.records, lost)
	}
	return tr
}

// TestLostSamples: a full ring refuses samples with -ENOSPC and counts
// them; the count comes before the next sample, as in the kernel, which
// takes the same number of 64-byte samples in a page.
func TestLostSamples(t *testing.T) {
	c, out := setup(t, 1, 64)
	rd, err := perf.NewReader(c.Maps["events"], 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := traceLost(t, out, func() (uint64, int, error) {
		rd.SetDeadline(time.Now().Add(20 * time.Millisecond))
		rec, err := rd.Read()
		if err == nil && rec.LostSamples == 0 && len(rec.RawSample) != 68 {
			t.Errorf("sample of %d bytes", len(rec.RawSample))
		}
		return rec.LostSamples, rec.Remaining, err
	})
	// 80-byte records in 4096 bytes, one kept free.
	if got.accepted != 51 || len(got.records) != 53 || got.records[51] != 6 || got.records[52] != 0 {
		t.Errorf("accepted %d, records %v", got.accepted, got.records)
	}
	if got.remaining != 50*80 {
		t.Errorf("remaining after the first record %d, want %d", got.remaining, 50*80)
	}
	kc, kout := kernel(t, 64)
	kr, err := ebpfperf.NewReader(kc.Maps["events"], 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer kr.Close()
	want := traceLost(t, kout, func() (uint64, int, error) {
		kr.SetDeadline(time.Now().Add(20 * time.Millisecond))
		rec, err := kr.Read()
		return rec.LostSamples, rec.Remaining, err
	})
	if got.accepted != want.accepted || len(got.records) != len(want.records) || got.records[51] != want.records[51] {
		t.Errorf("bpfvm %+v\nkernel %+v", got, want)
	}
	if got.remaining != want.remaining {
		t.Errorf("remaining: bpfvm %d, kernel %d", got.remaining, want.remaining)
	}
}

func TestReaderSemantics(t *testing.T) {
	c, out := setup(t, 2, 16)
	rd, err := perf.NewReader(c.Maps["events"], 1)
	if err != nil {
		t.Fatal(err)
	}
	if rd.BufferSize() != os.Getpagesize() {
		t.Errorf("buffer size %d", rd.BufferSize())
	}
	t.Run("deadline", func(t *testing.T) {
		rd.SetDeadline(time.Now().Add(10 * time.Millisecond))
		start := time.Now()
		if _, err := rd.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v, want os.ErrDeadlineExceeded", err)
		}
		if d := time.Since(start); d < 10*time.Millisecond {
			t.Errorf("returned after %v", d)
		}
		// A past deadline still returns what is there.
		if out(t) != 0 {
			t.Fatal("output failed")
		}
		rd.SetDeadline(time.Now().Add(-time.Second))
		if _, err := rd.Read(); err != nil {
			t.Fatalf("read with data and a past deadline: %v", err)
		}
		rd.SetDeadline(time.Time{})
	})
	t.Run("wakeup", func(t *testing.T) {
		done := make(chan error)
		go func() {
			_, err := rd.Read()
			done <- err
		}()
		time.Sleep(10 * time.Millisecond)
		if out(t) != 0 {
			t.Fatal("output failed")
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a blocked Read did not wake")
		}
	})
	t.Run("ReadInto reuses", func(t *testing.T) {
		for range 2 {
			if out(t) != 0 {
				t.Fatal("output failed")
			}
		}
		var rec perf.Record
		if err := rd.ReadInto(&rec); err != nil {
			t.Fatal(err)
		}
		first := &rec.RawSample[0]
		if err := rd.ReadInto(&rec); err != nil {
			t.Fatal(err)
		}
		if &rec.RawSample[0] != first || len(rec.RawSample) != 20 || rec.RawSample[0] != 1 {
			t.Errorf("ReadInto: new storage or wrong sample % x", rec.RawSample)
		}
		if rec.CPU < 0 || rec.CPU >= 2 || rec.Remaining != 0 {
			t.Errorf("cpu %d, remaining %d", rec.CPU, rec.Remaining)
		}
	})
	t.Run("flush", func(t *testing.T) {
		done := make(chan error)
		go func() {
			_, err := rd.Read()
			done <- err
		}()
		time.Sleep(10 * time.Millisecond)
		if err := rd.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, perf.ErrFlushed) {
			t.Fatalf("blocked read after flush: %v, want ErrFlushed", err)
		}
		// Pending records first, then ErrFlushed once, then reads block.
		if out(t) != 0 {
			t.Fatal("output failed")
		}
		if err := rd.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, want := range []error{nil, perf.ErrFlushed} {
			if _, err := rd.Read(); !errors.Is(err, want) && (err != nil || want != nil) {
				t.Fatalf("read after flush: %v, want %v", err, want)
			}
		}
		rd.SetDeadline(time.Now().Add(5 * time.Millisecond))
		if _, err := rd.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("second read after flush: %v", err)
		}
		rd.SetDeadline(time.Time{})
	})
	t.Run("pause", func(t *testing.T) {
		if out(t) != 0 {
			t.Fatal("output failed")
		}
		if err := rd.Pause(); err != nil {
			t.Fatal(err)
		}
		if ret := out(t); ret != -2 {
			t.Errorf("output while paused: %d, want -ENOENT", ret)
		}
		// What was written before stays readable; then reads wait.
		if _, err := rd.Read(); err != nil {
			t.Fatalf("read while paused: %v", err)
		}
		rd.SetDeadline(time.Now().Add(5 * time.Millisecond))
		if _, err := rd.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read while paused: %v", err)
		}
		rd.SetDeadline(time.Time{})
		done := make(chan error)
		go func() {
			_, err := rd.Read()
			done <- err
		}()
		time.Sleep(5 * time.Millisecond)
		if err := rd.Resume(); err != nil {
			t.Fatal(err)
		}
		if out(t) != 0 {
			t.Fatal("output after resume failed")
		}
		if err := <-done; err != nil {
			t.Fatalf("read after resume: %v", err)
		}
	})
	t.Run("watermark", func(t *testing.T) {
		c, out := setup(t, 1, 64)
		// Records of 80 bytes: the third passes a 200-byte watermark.
		wm, err := perf.NewReaderWithOptions(c.Maps["events"], 4096, perf.ReaderOptions{Watermark: 200})
		if err != nil {
			t.Fatal(err)
		}
		defer wm.Close()
		done := make(chan int)
		go func() {
			n := 0
			for {
				if _, err := wm.Read(); err != nil {
					done <- n
					return
				}
				n++
				if n == 3 {
					done <- n
					return
				}
			}
		}()
		for range 2 {
			if out(t) != 0 {
				t.Fatal("output failed")
			}
		}
		select {
		case n := <-done:
			t.Fatalf("read %d records below the watermark", n)
		case <-time.After(20 * time.Millisecond):
		}
		if out(t) != 0 {
			t.Fatal("output failed")
		}
		select {
		case n := <-done:
			if n != 3 {
				t.Fatalf("read %d records", n)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the watermark did not wake the reader")
		}
		// Below the watermark, the deadline returns what is there.
		if out(t) != 0 {
			t.Fatal("output failed")
		}
		wm.SetDeadline(time.Now().Add(5 * time.Millisecond))
		for _, want := range []error{nil, os.ErrDeadlineExceeded} {
			if _, err := wm.Read(); !errors.Is(err, want) && (err != nil || want != nil) {
				t.Fatalf("read at the deadline: %v, want %v", err, want)
			}
		}
	})
	t.Run("close unblocks", func(t *testing.T) {
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
			if !errors.Is(err, perf.ErrClosed) {
				t.Fatalf("blocked read: %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock Read")
		}
		if err := rd.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
		for _, f := range []func() error{rd.Pause, rd.Resume, rd.Flush, func() error { _, err := rd.Read(); return err }} {
			if err := f(); !errors.Is(err, os.ErrClosed) {
				t.Errorf("after close: %v, want ErrClosed", err)
			}
		}
		if ret := out(t); ret != -2 {
			t.Errorf("output after close: %d, want -ENOENT", ret)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		if _, err := perf.NewReader(c.Maps["config"], 4096); err == nil {
			t.Error("reader of an array")
		}
		if _, err := perf.NewReader(c.Maps["events"], 0); err == nil {
			t.Error("reader of 0 bytes")
		}
		if _, err := perf.NewReaderWithOptions(c.Maps["events"], 4096, perf.ReaderOptions{Watermark: 4096}); err == nil {
			t.Error("watermark of the whole ring")
		}
		if _, err := perf.NewReaderWithOptions(c.Maps["events"], 4096, perf.ReaderOptions{Watermark: 8, WakeupEvents: 1}); err == nil {
			t.Error("watermark and wakeup events")
		}
		if _, err := perf.NewReaderWithOptions(c.Maps["events"], 4096, perf.ReaderOptions{Overwritable: true}); !errors.Is(err, bpfvm.ErrNotSupported) {
			t.Errorf("overwritable: %v", err)
		}
	})
	t.Run("closed map", func(t *testing.T) {
		c, out := setup(t, 1, 8)
		rd, err := perf.NewReader(c.Maps["events"], 4096)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		if out(t) != 0 {
			t.Fatal("output failed")
		}
		// As the kernel on the map's release: the slots empty, the
		// reader reads what its rings hold.
		c.Maps["events"].Close()
		if ret := out(t); ret != -2 {
			t.Errorf("output after the map's close: %d, want -ENOENT", ret)
		}
		if _, err := rd.Read(); err != nil {
			t.Errorf("read after the map's close: %v", err)
		}
		if _, err := perf.NewReader(c.Maps["events"], 4096); !errors.Is(err, perf.ErrClosed) {
			t.Errorf("reader of a closed map: %v", err)
		}
	})
}

// TestConcurrentOutput: runs on several goroutines write while a reader
// reads, then the reader closes under them (run with -race). Every
// accepted sample is read or, for the ones refused, counted as lost.
func TestConcurrentOutput(t *testing.T) {
	const writers, runs = 4, 2000
	c, out := setup(t, writers, 64)
	rd, err := perf.NewReader(c.Maps["events"], 8192)
	if err != nil {
		t.Fatal(err)
	}
	var accepted, refused, samples, lost atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range runs {
				runtime.Gosched() // let the reader in
				switch ret := out(t); ret {
				case 0:
					accepted.Add(1)
				case -28:
					refused.Add(1)
				default:
					t.Errorf("output: %d", ret)
					return
				}
			}
		})
	}
	readerDone := make(chan error)
	go func() {
		var rec perf.Record
		for {
			if err := rd.ReadInto(&rec); err != nil {
				readerDone <- err
				return
			}
			if rec.LostSamples != 0 {
				lost.Add(int64(rec.LostSamples))
			} else {
				samples.Add(1)
			}
		}
	}()
	wg.Wait()
	drain := func() {
		deadline := time.Now().Add(10 * time.Second)
		for samples.Load() < accepted.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	drain()
	// Lost counts are written before the next sample that fits in the same
	// CPU's ring. Which ring a run writes is its runner's, which the runs
	// choose themselves, so follow-up samples come from all the writers
	// at once, in rounds, until the refusals show as lost.
	for deadline := time.Now().Add(5 * time.Second); refused.Load() > 0 && lost.Load() == 0 && time.Now().Before(deadline); {
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for range 10 {
					runtime.Gosched()
					if out(t) == 0 {
						accepted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		drain()
	}
	if refused.Load() > 0 && lost.Load() == 0 {
		t.Errorf("%d samples refused, none reported lost", refused.Load())
	}
	// Close under writers and the blocked reader: what they write until
	// the close may or may not be read.
	before := accepted.Load()
	var wg2 sync.WaitGroup
	wg2.Go(func() {
		for range 200 {
			switch ret := out(t); ret {
			case 0:
				accepted.Add(1)
			case -2, -28:
			default:
				t.Errorf("output during close: %d", ret)
			}
		}
	})
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
	wg2.Wait()
	if err := <-readerDone; !errors.Is(err, perf.ErrClosed) {
		t.Errorf("reader: %v", err)
	}
	if samples.Load() < before || samples.Load() > accepted.Load() || lost.Load() > refused.Load() {
		t.Errorf("accepted %d, read %d; refused %d, lost %d", accepted.Load(), samples.Load(), refused.Load(), lost.Load())
	}
	t.Logf("accepted %d, read %d; refused %d, lost reported %d", accepted.Load(), samples.Load(), refused.Load(), lost.Load())
}
