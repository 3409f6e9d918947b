//go:build linux

package bpfvm_test

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
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
// (one op is one repetition) and by single Run calls (one op is one call);
// the tc/ ones a tc program's, whose runs set up a socket buffer.
// cpu-ns/op is the thread's CPU time per op.
func BenchmarkRunCost(b *testing.B) {
	insns, err := isa.Assemble("r0 = 2\nexit")
	if err != nil {
		b.Fatal(err)
	}
	pkt := make([]byte, 64)
	for _, typ := range []ebpf.ProgramType{ebpf.XDP, ebpf.SchedCLS} {
		prefix := ""
		if typ == ebpf.SchedCLS {
			prefix = "tc/"
		}
		for _, eng := range []bpfvm.Engine{bpfvm.EngineJIT, bpfvm.EngineInterpreter} {
			p, err := bpfvm.NewRawProgram("empty", typ, insns, bpfvm.ProgramOptions{Engine: eng})
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
			b.Run(prefix+eng.String()+"/repeat", func(b *testing.B) {
				measure(b, func() (uint32, error) {
					return p.Run(&bpfvm.RunOptions{Data: pkt, Repeat: uint32(b.N)})
				})
			})
			b.Run(prefix+eng.String()+"/single", func(b *testing.B) {
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
}

// BenchmarkRunCostKernel compares the cost of an empty XDP run amortised
// over repetitions with the kernel's test run of the same program
// (BPF_PROG_TEST_RUN with repeat, through cilium/ebpf): each b.N iteration
// runs a batch of each in turn, so the figures come from one interleaved
// run. ours-ns is our thread's CPU time per repetition on the JIT
// (interp-ns the interpreter's), kernel-ns the kernel's own per-run
// figure (its timer stops while the run is preempted), each the best
// batch; ratio is ours over the kernel's.
func BenchmarkRunCostKernel(b *testing.B) {
	if !kernelAvailable(b) {
		b.Skip("bpf() not permitted")
	}
	insns, err := isa.Assemble("r0 = 2\nexit")
	if err != nil {
		b.Fatal(err)
	}
	const batch = 200000
	pkt := make([]byte, 64)
	var progs []*bpfvm.Program
	for _, eng := range []bpfvm.Engine{bpfvm.EngineJIT, bpfvm.EngineInterpreter} {
		p, err := bpfvm.NewRawProgram("empty", ebpf.XDP, insns, bpfvm.ProgramOptions{Engine: eng})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		progs = append(progs, p)
	}
	kp, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}})
	if err != nil {
		b.Skipf("kernel: %v", err)
	}
	defer kp.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := make([]float64, len(progs)+1)
	keep := func(i int, ns float64) {
		if best[i] == 0 || ns < best[i] {
			best[i] = ns
		}
	}
	for b.Loop() {
		for i, p := range progs {
			start := threadCPU(b)
			if v, err := p.Run(&bpfvm.RunOptions{Data: pkt, Repeat: batch}); err != nil || v != 2 {
				b.Fatalf("got %d, %v; want 2", v, err)
			}
			keep(i, float64(threadCPU(b)-start)/batch)
		}
		v, d, err := kp.Benchmark(pkt, batch, nil)
		if err != nil || v != 2 {
			b.Fatalf("kernel: got %d, %v; want 2", v, err)
		}
		keep(len(progs), float64(d.Nanoseconds()))
	}
	b.ReportMetric(best[0], "ours-ns")
	b.ReportMetric(best[1], "interp-ns")
	b.ReportMetric(best[2], "kernel-ns")
	b.ReportMetric(best[0]/best[2], "ratio")
}
