package bpfvm_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/internal/benchscale"
)

// BenchmarkScaling measures how runs scale with goroutines: the programs
// of internal/benchscale run on the JIT by 1, 2 and GOMAXPROCS goroutines
// at once, by single Run calls (one op: one call) and batched
// (RunOptions.Repeat, one op: one repetition), next to a control of pure
// Go arithmetic (the machine's ceiling). One b.N iteration measures every
// goroutine count in turn, so the figures come from one interleaved run,
// each the best over the iterations: ns/run-gN is the wall-clock time per
// run of the whole with N goroutines and xN the throughput of N over
// one's (ideally N on N idle cores); cpu-xN is the CPU time per run of one
// goroutine over N's, 1 when runs share nothing (a shared cache line
// written per run makes it fall), whatever the machine's load.
func BenchmarkScaling(b *testing.B) {
	gs := benchscale.Goroutines(runtime.GOMAXPROCS(0))
	bench := func(b *testing.B, total int, run func(i, n int) error) {
		best := make([]benchscale.Figures, len(gs))
		for b.Loop() {
			fs, err := benchscale.Interleaved(gs, total, 1, run)
			if err != nil {
				b.Fatal(err)
			}
			for k, f := range fs {
				best[k] = benchscale.Best(best[k], f)
			}
		}
		for k, g := range gs {
			b.ReportMetric(best[k].Wall, fmt.Sprintf("ns/run-g%d", g))
			if k > 0 {
				b.ReportMetric(best[0].Wall/best[k].Wall, fmt.Sprintf("x%d", g))
				b.ReportMetric(best[0].CPU/best[k].CPU, fmt.Sprintf("cpu-x%d", g))
			}
		}
	}
	b.Run("control", func(b *testing.B) { bench(b, 4000000, benchscale.Control) })
	for _, c := range benchscale.Cases() {
		coll, err := bpfvm.NewCollectionWithOptions(c.Spec(), bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT}})
		if err != nil {
			b.Fatal(err)
		}
		defer coll.Close()
		if c.Fill != nil {
			put := func(m string, k, v any) error { return coll.Maps[m].Put(k, v) }
			if err := c.Fill(put, runtime.GOMAXPROCS(0)); err != nil {
				b.Fatal(err)
			}
		}
		p := coll.Programs[c.Prog]
		if p.Engine() != bpfvm.EngineJIT {
			b.Fatalf("%s runs on %s", c.Name, p.Engine())
		}
		b.Run(c.Name+"/single", func(b *testing.B) {
			bench(b, 20000, func(i, n int) error {
				opts := &bpfvm.RunOptions{Data: benchscale.Data(i)}
				for range n {
					if r, err := p.Run(opts); err != nil || r != 2 {
						return fmt.Errorf("got %d, %v; want 2", r, err)
					}
				}
				return nil
			})
		})
		b.Run(c.Name+"/repeat", func(b *testing.B) {
			bench(b, 400000, func(i, n int) error {
				r, err := p.Run(&bpfvm.RunOptions{Data: benchscale.Data(i), Repeat: uint32(n)})
				if err != nil || r != 2 {
					return fmt.Errorf("got %d, %v; want 2", r, err)
				}
				return nil
			})
		})
	}
}
