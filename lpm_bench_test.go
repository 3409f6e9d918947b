package bpfvm_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// BenchmarkLPMLookup measures LPM trie lookups of IPv4 addresses from a
// program (lpm_bench: one lookup per run, repeated in one test run) and
// from Go, on bpfvm and on the kernel (BPF_PROG_TEST_RUN with repeat; the
// cilium/ebpf syscall Lookup), with 1k, 100k and 1M prefixes of mixed
// lengths. Each b.N iteration is one round measuring the four in turn, so
// that the ratios come from one interleaved run:
//
//	go test -run - -bench LPMLookup -benchtime 5x .
//
// prog-ratio and go-ratio are bpfvm's time over the kernel's (below 1:
// bpfvm is faster).
func BenchmarkLPMLookup(b *testing.B) {
	for _, n := range []int{1000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) { benchLPM(b, n) })
	}
}

func benchLPM(b *testing.B, n int) {
	spec, err := loader.LoadCollectionSpec("testdata/lpm_bloom.o")
	if err != nil {
		b.Fatal(err)
	}
	spec.Maps["v4"].MaxEntries = uint32(n)
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer coll.Close()
	var kcoll *ebpf.Collection
	if kernelAvailable(b) {
		if kcoll, err = ebpf.NewCollection(spec); err != nil {
			b.Logf("kernel: %v", err)
			kcoll = nil
		} else {
			defer kcoll.Close()
		}
	}
	// Prefixes: random addresses, lengths 8 to 32 weighted towards /24
	// as in routing tables. The probes are addresses inside inserted
	// prefixes, so every lookup walks to a match.
	r := rand.New(rand.NewPCG(uint64(n), 42))
	probes := make([][4]byte, 0, 64)
	for i := 0; i < n; i++ {
		addr := [4]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}
		plen := uint32(24)
		switch r.IntN(4) {
		case 0:
			plen = 8 + uint32(r.IntN(16))
		case 1:
			plen = 25 + uint32(r.IntN(8))
		}
		key := lpmKey4{plen, addr}
		if err := coll.Maps["v4"].Put(key, uint32(i+1)); err != nil {
			b.Fatal(err)
		}
		if kcoll != nil {
			if err := kcoll.Maps["v4"].Put(key, uint32(i+1)); err != nil {
				b.Fatal(err)
			}
		}
		if len(probes) < cap(probes) && i%(n/64+1) == 0 {
			probes = append(probes, addr)
		}
	}
	pkts := make([][]byte, len(probes))
	for i, a := range probes {
		pkt := make([]byte, 64)
		copy(pkt[14+16:], a[:])
		pkts[i] = pkt
	}
	const repeat = 2000 // runs per test run
	// bpfvm's time is its thread's CPU time (onThreadCPU), the kernel's
	// the test run's, which leaves out the time it is rescheduled.
	progTime := func(p interface {
		Benchmark([]byte, int, func()) (uint32, time.Duration, error)
	}, cpu bool) time.Duration {
		var total time.Duration
		for _, pkt := range pkts {
			var ret uint32
			var d time.Duration
			var err error
			t := onThreadCPU(func() { ret, d, err = p.Benchmark(pkt, repeat, nil) })
			if err != nil {
				b.Fatal(err)
			}
			if ret == 0 {
				b.Fatal("probe not found")
			}
			if cpu {
				d = t / repeat
			}
			total += d
		}
		return total / time.Duration(len(pkts))
	}
	goTime := func(lookup func(key lpmKey4, v *uint32) error) time.Duration {
		start := time.Now()
		var v uint32
		for range 20 {
			for _, a := range probes {
				if err := lookup(lpmKey4{32, a}, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
		return time.Since(start) / time.Duration(20*len(probes))
	}
	var progVM, progK, goVM, goK time.Duration
	b.ResetTimer()
	for range b.N {
		progVM += progTime(coll.Programs["lpm_bench"], true)
		goVM += goTime(func(k lpmKey4, v *uint32) error { return coll.Maps["v4"].Lookup(k, v) })
		if kcoll != nil {
			progK += progTime(kcoll.Programs["lpm_bench"], false)
			goK += goTime(func(k lpmKey4, v *uint32) error { return kcoll.Maps["v4"].Lookup(k, v) })
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(progVM), "prog-ns")
	b.ReportMetric(per(goVM), "go-ns")
	if kcoll != nil {
		b.ReportMetric(per(progK), "kprog-ns")
		b.ReportMetric(per(goK), "kgo-ns")
		b.ReportMetric(float64(progVM)/float64(progK), "prog-ratio")
		b.ReportMetric(float64(goVM)/float64(goK), "go-ratio")
	}
	b.ReportMetric(0, "ns/op")
}
