package main

import (
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
)

// BenchmarkSingleRun measures what `bpfvm run` reports for one run of a
// small XDP program (maps_cli.o's count: an array lookup, two hash
// updates, a global and a bpf_printk), the program loaded afresh for each
// run as the command loads it, next to the kernel's test run of the same
// object loaded afresh (`bpftool prog run` with repeat 1), interleaved so
// that the machine's load falls on both alike. It reports the medians:
// ours-ns (the engine `run` picks for one run), jit-ns, kernel-ns, and
// ratio = ours/kernel.
func BenchmarkSingleRun(b *testing.B) {
	const obj, name = "testdata/maps_cli.o", "count"
	spec, err := openObject(obj)
	if err != nil {
		b.Fatal(err)
	}
	pkt := make([]byte, 34)
	trace := newTracePipe(discard{})
	once := func(e bpfvm.Engine) time.Duration {
		l := loadOne(obj, spec, name, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Output: trace}})
		if l.err != nil {
			b.Fatal(l.err)
		}
		defer l.close()
		res, err := l.prog.Execute(&bpfvm.RunOptions{Data: pkt, DataOut: make([]byte, defaultSizeOut)})
		if err != nil || res.R0 != 2 {
			b.Fatalf("got %d, %v; want 2", res.R0, err)
		}
		trace.Flush()
		return res.Duration
	}
	kernel := kernelAvailable() && rlimit.RemoveMemlock() == nil
	kernelOnce := func() time.Duration {
		coll, err := ebpf.NewCollection(spec.Copy())
		if err != nil {
			b.Fatal(err)
		}
		defer coll.Close()
		ret, d, err := coll.Programs[name].Benchmark(pkt, 1, nil)
		if err != nil || ret != 2 {
			b.Fatalf("kernel: got %d, %v; want 2", ret, err)
		}
		return d
	}
	if kernel {
		kernelOnce() // the kernel's first bpf_printk sets up its trace buffer
	}
	var ours, jit, kern []time.Duration
	for b.Loop() {
		ours = append(ours, once(runEngine(bpfvm.EngineDefault, 1, false)))
		jit = append(jit, once(bpfvm.EngineJIT))
		if kernel {
			kern = append(kern, kernelOnce())
		}
	}
	b.ReportMetric(float64(median(ours)), "ours-ns")
	b.ReportMetric(float64(median(jit)), "jit-ns")
	if kernel {
		b.ReportMetric(float64(median(kern)), "kernel-ns")
		b.ReportMetric(float64(median(ours))/float64(median(kern)), "ratio")
	}
	b.ReportMetric(0, "ns/op") // an op is three loads: the medians say it
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// discard is io.Discard as a distinct type (the trace pipe's writer).
type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
