package bpfvm_test

import (
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// kernelAvailable reports whether benchmarks can compare with the kernel.
func kernelAvailable(b *testing.B) bool {
	if os.Getuid() != 0 {
		return false
	}
	return rlimit.RemoveMemlock() == nil
}

// Go-side map operations, bpfvm next to the kernel through cilium/ebpf.
func BenchmarkMapFromGo(b *testing.B) {
	for _, typ := range []ebpf.MapType{ebpf.Array, ebpf.Hash} {
		spec := &ebpf.MapSpec{Name: "bench", Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 1024}
		b.Run(typ.String(), func(b *testing.B) {
			coll, err := bpfvm.NewCollection(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"bench": spec}})
			if err != nil {
				b.Fatal(err)
			}
			defer coll.Close()
			ours := coll.Maps["bench"]
			for k := uint32(0); k < 1024; k++ {
				if err := ours.Put(k, uint64(k)); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("lookup/bpfvm", func(b *testing.B) {
				var v uint64
				for i := 0; b.Loop(); i++ {
					if err := ours.Lookup(uint32(i&1023), &v); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("update/bpfvm", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if err := ours.Put(uint32(i&1023), uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
			})
			if !kernelAvailable(b) {
				return
			}
			km, err := ebpf.NewMap(spec)
			if err != nil {
				b.Logf("kernel map: %v", err)
				return
			}
			defer km.Close()
			for k := uint32(0); k < 1024; k++ {
				if err := km.Put(k, uint64(k)); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("lookup/kernel", func(b *testing.B) {
				var v uint64
				for i := 0; b.Loop(); i++ {
					if err := km.Lookup(uint32(i&1023), &v); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("update/kernel", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if err := km.Put(uint32(i&1023), uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkMapPerf runs the map_perf programs (64 lookups per run, as in
// the kernel series that inlined bpf_map_lookup_elem) on bpfvm and, where
// bpf() is permitted, on the kernel, reporting ns per run.
func BenchmarkMapPerf(b *testing.B) {
	spec, err := loader.LoadCollectionSpec("testdata/map_perf.o")
	if err != nil {
		b.Fatal(err)
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer coll.Close()
	noInline, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoInline: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer noInline.Close()
	for k := uint32(0); k < 64; k++ {
		for _, m := range []string{"perf_array", "perf_hash"} {
			if err := coll.Maps[m].Put(k, uint64(k+1)); err != nil {
				b.Fatal(err)
			}
			if err := noInline.Maps[m].Put(k, uint64(k+1)); err != nil {
				b.Fatal(err)
			}
		}
	}
	var kcoll *ebpf.Collection
	if kernelAvailable(b) {
		if kcoll, err = ebpf.NewCollection(spec); err != nil {
			b.Logf("kernel: %v", err)
			kcoll = nil
		} else {
			defer kcoll.Close()
			for k := uint32(0); k < 64; k++ {
				for _, m := range []string{"perf_array", "perf_hash"} {
					if err := kcoll.Maps[m].Put(k, uint64(k+1)); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	pkt := make([]byte, 64)
	for _, name := range []string{"array_lookup", "hash_lookup"} {
		b.Run(name+"/bpfvm", func(b *testing.B) {
			p := coll.Programs[name]
			ret, _, err := p.Benchmark(pkt, 1, nil)
			if err != nil || ret != 2080 {
				b.Fatalf("returned %d, %v; want 2080", ret, err)
			}
			benchmarkRuns(b, func(n int) (time.Duration, error) {
				_, d, err := p.Benchmark(pkt, n, nil)
				return d, err
			})
		})
		b.Run(name+"/bpfvm-noinline", func(b *testing.B) {
			p := noInline.Programs[name]
			benchmarkRuns(b, func(n int) (time.Duration, error) {
				_, d, err := p.Benchmark(pkt, n, nil)
				return d, err
			})
		})
		if kcoll == nil {
			continue
		}
		b.Run(name+"/kernel", func(b *testing.B) {
			p := kcoll.Programs[name]
			benchmarkRuns(b, func(n int) (time.Duration, error) {
				_, d, err := p.Benchmark(pkt, n, nil)
				return d, err
			})
		})
	}
}

// benchmarkRuns reports the per-run duration that run measures over b.N
// repetitions.
func benchmarkRuns(b *testing.B, run func(n int) (time.Duration, error)) {
	b.ResetTimer()
	d, err := run(b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "ns/run")
}
