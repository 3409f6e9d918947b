package bpfvm_test

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

// threadCPU returns the CPU time the calling OS thread has used, in ns. On a
// shared machine it is steadier than wall-clock time: waiting for a CPU
// does not count.
func threadCPU(b *testing.B) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkRunCost measures the fixed cost of a run: an XDP program that
// only returns XDP_PASS, on a 64-byte packet, run with RunOptions.Repeat
// (one op is one repetition) and by single Run calls (one op is one call).
// cpu-ns/op is the thread's CPU time per op.
func BenchmarkRunCost(b *testing.B) {
	insns, err := isa.Assemble("r0 = 2\nexit")
	if err != nil {
		b.Fatal(err)
	}
	pkt := make([]byte, 64)
	for _, eng := range []bpfvm.Engine{bpfvm.EngineJIT, bpfvm.EngineInterpreter} {
		p, err := bpfvm.NewRawProgram("empty", ebpf.XDP, insns, bpfvm.ProgramOptions{Engine: eng})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		if p.Engine() != eng {
			b.Fatalf("runs on %s, want %s", p.Engine(), eng)
		}
		measure := func(b *testing.B, run func() (uint32, error)) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			start := threadCPU(b)
			v, err := run()
			cpu := threadCPU(b) - start
			b.StopTimer()
			if err != nil || v != 2 {
				b.Fatalf("got %d, %v; want 2", v, err)
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		}
		b.Run(eng.String()+"/repeat", func(b *testing.B) {
			measure(b, func() (uint32, error) {
				return p.Run(&bpfvm.RunOptions{Data: pkt, Repeat: uint32(b.N)})
			})
		})
		b.Run(eng.String()+"/single", func(b *testing.B) {
			measure(b, func() (uint32, error) {
				for range b.N - 1 {
					if _, err := p.Run(&bpfvm.RunOptions{Data: pkt}); err != nil {
						return 0, err
					}
				}
				return p.Run(&bpfvm.RunOptions{Data: pkt})
			})
		})
	}
}
