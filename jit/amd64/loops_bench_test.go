//go:build amd64 && linux

package amd64

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm/isa"
)

// The loops of testdata/loops.c as the rewrite leaves them (bpfvm dump
// --xlated), with n in the first word of the data region (R1).

// mayGotoLoop is cond_break_count: an empty loop bounded by n with a timed
// may_goto (the placeholder may_goto is made timed by loopProgram).
const mayGotoLoop = `
	*(u64 *)(r10 -520) = 65535
	*(u64 *)(r10 -528) = 0
	r0 = 0
	r2 = *(u32 *)(r1 +0)
	if r2 == 0x0 goto out
l:
	may_goto out
	r2 = *(u32 *)(r1 +0)
	r0 += 1
	r3 = r0
	r3 <<= 32
	r3 >>= 32
	if r2 > r3 goto l
out:
	exit
`

// iterLoop is for_empty: an empty bpf_for loop over [0, n); the iterator
// is set up in place of bpf_iter_num_new and "r0 = r1" stands for
// bpf_iter_num_next (isa.OpIterNumNext, put in by loopProgram).
const iterLoop = `
	r6 = r1
	r3 = *(u32 *)(r6 +0)
	*(u32 *)(r10 -8) = -1
	*(u32 *)(r10 -4) = r3
	r7 = 0
l:
	r1 = r10
	r1 += -8
	r0 = r1
	if r0 == 0x0 goto out
	r1 = *(u32 *)(r0 +0)
	r2 = r1
	r2 <<= 32
	r2 s>>= 32
	if r7 s> r2 goto out
	r2 = *(u32 *)(r6 +0)
	if r2 > r1 goto l
out:
	r0 = 1
	exit
`

// callLoop is loop_empty after the rewrite inlined bpf_loop: the callback
// is called directly, n times.
const callLoop = `
	r6 = *(u32 *)(r1 +0)
	r7 = 0
l:
	if r7 >= r6 goto done
	r1 = r7
	r2 = r8
	call cb
	r7 += 1
	if r0 == 0x0 goto l
done:
	r0 = r7
	exit
cb:
	r0 = 0
	exit
`

// loopProgram assembles one of the loops above and puts in the internal
// instructions the rewrite would.
func loopProgram(tb testing.TB, src string) []isa.Instruction {
	tb.Helper()
	prog, err := isa.Assemble(src)
	if err != nil {
		tb.Fatal(err)
	}
	for i, ins := range prog {
		switch {
		case ins.Op == isa.OpMayGoto:
			prog[i].Op, prog[i].Imm = isa.OpMayGotoTimed, 250000
		case ins.Op == isa.ClassALU64|isa.ALUMov|isa.SrcX && ins.Dst == isa.R0 && ins.Src == isa.R1:
			prog[i] = isa.Instruction{Op: isa.OpIterNumNext, Dst: isa.R0, Src: isa.R1, Imm: isa.KfuncIterNumNext}
		}
	}
	return prog
}

// threadCPU returns the CPU time the calling thread has used: the machine
// may be shared, and time spent preempted is not the loop's.
func threadCPU(tb testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// BenchmarkLoops reports the cost of a loop round (cpu-ns/round: thread
// CPU time, since the machine may be loaded) of empty loops with a timed
// may_goto, with bpf_for and with an inlined bpf_loop, run without an
// instruction budget (as programs normally run) and with one (exact
// instruction accounting).
func BenchmarkLoops(b *testing.B) {
	const rounds = 1 << 16
	for _, l := range []struct{ name, src string }{
		{"may_goto", mayGotoLoop}, {"bpf_for", iterLoop}, {"bpf_loop", callLoop},
	} {
		p, err := Compile(loopProgram(b, l.src), nil, Options{Modes: Unchecked})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		te := newEnv(b, false, 64)
		binary.LittleEndian.PutUint32(te.dataBytes(), rounds)
		for _, budget := range []uint64{0, 1 << 40} {
			name := l.name
			if budget != 0 {
				name += "/budget"
			}
			b.Run(name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if _, err := p.Run(te.env, te.addr, 0, budget); err != nil {
					b.Fatal(err)
				}
				t0 := threadCPU(b)
				for b.Loop() {
					if _, err := p.Run(te.env, te.addr, 0, budget); err != nil {
						b.Fatal(err)
					}
				}
				d := threadCPU(b) - t0
				b.ReportMetric(float64(d.Nanoseconds())/float64(b.N)/rounds, "cpu-ns/round")
			})
		}
	}
}
