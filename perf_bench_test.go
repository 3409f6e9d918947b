package bpfvm_test

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	ebpfperf "github.com/cilium/ebpf/perf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/perf"
)

// perfRound is one measurement: producers, one per CPU, each output
// perRunner 64-byte samples; a reader drains them. It returns the samples
// read per second of wall time, the share lost to full rings, and the
// helper calls per second of the producers.
func perfRound(b *testing.B, ncpu, perRunner int, produce func(cpu, n int) error, read func() (lost uint64, err error)) (rate, lostShare, calls float64) {
	var samples, lost uint64
	done := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		for {
			l, err := read()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				select {
				case <-stop:
					done <- nil
					return
				default:
					continue
				}
			}
			if err != nil {
				done <- err
				return
			}
			if l != 0 {
				lost += l
			} else {
				samples++
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, ncpu)
	for cpu := range ncpu {
		wg.Go(func() {
			if err := produce(cpu, perRunner); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	produced := time.Since(start)
	close(stop)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	// The reader's last deadline (1ms) is not the producers' time.
	elapsed := time.Since(start) - time.Millisecond
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	total := float64(ncpu * perRunner)
	return float64(samples) / elapsed.Seconds(), 1 - float64(samples)/total, total / produced.Seconds()
}

// BenchmarkPerfEventOutput is bpf_perf_event_output throughput (#13): a tc
// program outputs 64-byte samples, one producer per CPU running it with
// Repeat, one reader draining the rings (256 KiB per CPU), on bpfvm and on
// the kernel (BPF_PROG_TEST_RUN with repeat into cilium/ebpf's perf
// reader), in interleaved rounds. It reports the median records read per
// second of each and their ratio, the share lost to full rings and the
// producers' helper calls per second; run with -benchtime=Nx for N rounds.
func BenchmarkPerfEventOutput(b *testing.B) {
	const (
		perRunner = 50000
		chunk     = 1000 // repetitions per run
		ring      = 256 << 10
	)
	ncpu := runtime.NumCPU()
	spec, err := loader.LoadCollectionSpec("testdata/helpers_perf.o")
	if err != nil {
		b.Fatal(err)
	}
	c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: ncpu})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cfg := perfConfig{Flags: perfCurrentCPU, Size: 64}
	if err := c.Maps["config"].Put(uint32(0), cfg); err != nil {
		b.Fatal(err)
	}
	rd, err := perf.NewReader(c.Maps["events"], ring)
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	pkt := make([]byte, 64)
	var rec perf.Record
	vmRound := func() (float64, float64, float64) {
		return perfRound(b, ncpu, perRunner, func(_, n int) error {
			for i := 0; i < n; i += chunk {
				if _, err := c.Programs["perf_tc"].Run(&bpfvm.RunOptions{Data: pkt, Repeat: chunk}); err != nil {
					return err
				}
			}
			return nil
		}, func() (uint64, error) {
			rd.SetDeadline(time.Now().Add(time.Millisecond))
			err := rd.ReadInto(&rec)
			return rec.LostSamples, err
		})
	}

	var kernRound func() (float64, float64, float64)
	if kernelAvailable(b) {
		kc, err := ebpf.NewCollection(spec)
		if err != nil {
			b.Fatal(err)
		}
		defer kc.Close()
		if err := kc.Maps["config"].Put(uint32(0), cfg); err != nil {
			b.Fatal(err)
		}
		kr, err := ebpfperf.NewReader(kc.Maps["events"], ring)
		if err != nil {
			b.Fatal(err)
		}
		defer kr.Close()
		var krec ebpfperf.Record
		kernRound = func() (float64, float64, float64) {
			return perfRound(b, ncpu, perRunner, func(cpu, n int) error {
				// One producer per CPU, as bpfvm's runners.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					return err
				}
				for i := 0; i < n; i += chunk {
					if _, err := kc.Programs["perf_tc"].Run(&ebpf.RunOptions{Data: pkt, Repeat: chunk}); err != nil {
						return err
					}
				}
				return nil
			}, func() (uint64, error) {
				kr.SetDeadline(time.Now().Add(time.Millisecond))
				err := kr.ReadInto(&krec)
				return krec.LostSamples, err
			})
		}
	}

	var vmRates, kRates, vmLost, kLost, vmCalls, kCalls []float64
	b.ResetTimer()
	for range b.N {
		r, l, n := vmRound()
		vmRates, vmLost, vmCalls = append(vmRates, r), append(vmLost, l), append(vmCalls, n)
		if kernRound != nil {
			r, l, n := kernRound()
			kRates, kLost, kCalls = append(kRates, r), append(kLost, l), append(kCalls, n)
		}
	}
	b.StopTimer()
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(median(vmRates), "bpfvm-rec/s")
	b.ReportMetric(median(vmLost), "bpfvm-lost")
	b.ReportMetric(median(vmCalls), "bpfvm-calls/s")
	if kernRound != nil {
		b.ReportMetric(median(kRates), "kernel-rec/s")
		b.ReportMetric(median(kLost), "kernel-lost")
		b.ReportMetric(median(kCalls), "kernel-calls/s")
		b.ReportMetric(median(vmRates)/median(kRates), "bpfvm/kernel")
	}
}
