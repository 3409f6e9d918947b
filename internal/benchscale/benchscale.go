// Package benchscale is the scaling workload of the benchmarks (the root
// package's BenchmarkScaling and `bpfvm bench`): small XDP programs run by
// 1, 2 or more goroutines at once, each on data of its own, so that the
// throughput of g goroutines over one's shows what runs share.
package benchscale

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Case is one program of the workload.
type Case struct {
	Name string
	// Spec is the program (named Prog) and its maps.
	Spec func() *ebpf.CollectionSpec
	Prog string
	// Fill gives the maps their contents; ncpu is the number of values of
	// a per-CPU map's element.
	Fill func(put func(m string, key, value any) error, ncpu int) error
}

// Data is goroutine g's packet: the programs that read a key read it from
// the first 4 bytes, so each goroutine has a key of its own.
func Data(g int) []byte {
	pkt := make([]byte, 64)
	binary.LittleEndian.PutUint32(pkt, uint32(g))
	return pkt
}

// Cases are the workload's programs, each returning XDP_PASS (2):
//   - empty: nothing else, the fixed cost of a run;
//   - percpu_array: increments an 8-byte per-CPU array value (one
//     element), so that runs on different CPUs write values next to each
//     other in the element;
//   - hash: looks up the goroutine's own key (the packet's first 4 bytes)
//     in a hash and reads its value.
func Cases() []Case {
	xdp := func(name string, m map[string]*ebpf.MapSpec, insns ...asm.Instruction) func() *ebpf.CollectionSpec {
		return func() *ebpf.CollectionSpec {
			return &ebpf.CollectionSpec{Maps: m, Programs: map[string]*ebpf.ProgramSpec{
				name: {Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns},
			}}
		}
	}
	lookup := func(m string) []asm.Instruction {
		return []asm.Instruction{
			asm.LoadMapPtr(asm.R1, 0).WithReference(m),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
		}
	}
	percpu := append([]asm.Instruction{asm.StoreImm(asm.RFP, -4, 0, asm.Word)}, lookup("pc")...)
	percpu = append(percpu,
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
		asm.Return(),
	)
	hash := []asm.Instruction{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 4),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R2, asm.R2, 0, asm.Word),
		asm.StoreMem(asm.RFP, -4, asm.R2, asm.Word),
	}
	hash = append(hash, lookup("h")...)
	hash = append(hash,
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
		asm.Return(),
	)
	return []Case{
		{Name: "empty", Prog: "empty", Spec: xdp("empty", nil, asm.Mov.Imm(asm.R0, 2), asm.Return())},
		{
			Name: "percpu_array", Prog: "percpu_inc",
			Spec: xdp("percpu_inc", map[string]*ebpf.MapSpec{
				"pc": {Name: "pc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1},
			}, percpu...),
		},
		{
			Name: "hash", Prog: "hash_lookup",
			Spec: xdp("hash_lookup", map[string]*ebpf.MapSpec{
				"h": {Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1024},
			}, hash...),
			Fill: func(put func(m string, key, value any) error, _ int) error {
				for k := uint32(0); k < 256; k++ {
					if err := put("h", k, uint64(k)); err != nil {
						return err
					}
				}
				return nil
			},
		},
	}
}

// Figures are the ns per run of a measurement: Wall is the wall-clock
// time of the whole over the runs; CPU the goroutines' threads' CPU time
// over the runs, which waiting for a CPU does not count: on a machine
// other processes load, it stays what runs cost while Wall shows how many
// cores there were to spare. Runs that share nothing keep their CPU time
// per run whatever the number of goroutines; a cache line they all write
// makes it grow.
type Figures struct{ Wall, CPU float64 }

// Throughput runs total runs split evenly over g goroutines, each on an
// OS thread of its own calling run(i, n) for its share n (i is the
// goroutine, 0 to g-1), all started together.
func Throughput(g, total int, run func(i, n int) error) (Figures, error) {
	n := max(total/g, 1)
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, g)
	cpu := make([]time.Duration, g)
	for i := range g {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-start
			c0 := threadCPU()
			errs[i] = run(i, n)
			cpu[i] = threadCPU() - c0
		})
	}
	t := time.Now()
	close(start)
	wg.Wait()
	d := time.Since(t)
	var sum time.Duration
	for i, err := range errs {
		if err != nil {
			return Figures{}, fmt.Errorf("goroutine %d: %w", i, err)
		}
		sum += cpu[i]
	}
	runs := float64(n * g)
	return Figures{Wall: float64(d.Nanoseconds()) / runs, CPU: float64(sum.Nanoseconds()) / runs}, nil
}

// Interleaved measures the throughput of each goroutine count in gs
// (Throughput of total runs) in rounds, the counts in turn within a round
// so that a shared machine's load falls on all of them alike, and returns
// each count's best figures (each the least over the rounds).
func Interleaved(gs []int, total, rounds int, run func(i, n int) error) ([]Figures, error) {
	best := make([]Figures, len(gs))
	for range max(rounds, 1) {
		for k, g := range gs {
			f, err := Throughput(g, total, run)
			if err != nil {
				return nil, err
			}
			best[k] = Best(best[k], f)
		}
	}
	return best, nil
}

// Best is the least of each figure of a and b (a zero figure is none).
func Best(a, b Figures) Figures {
	if a.Wall == 0 || b.Wall < a.Wall {
		a.Wall = b.Wall
	}
	if a.CPU == 0 || b.CPU < a.CPU {
		a.CPU = b.CPU
	}
	return a
}

// Goroutines are the goroutine counts measured: 1, 2 and GOMAXPROCS (when
// it is more than 2).
func Goroutines(gomaxprocs int) []int {
	if gomaxprocs > 2 {
		return []int{1, 2, gomaxprocs}
	}
	return []int{1, 2}
}

// Control is a run function of pure Go arithmetic sharing nothing, n
// rounds of about a nanosecond: its throughput over goroutine counts is
// what the machine has to spare, the ceiling of the programs'.
func Control(i, n int) error {
	x := uint64(i)
	for k := range n {
		x = x*31 + uint64(k)
	}
	if x == 1 { // keeps the loop
		return fmt.Errorf("control %d", x)
	}
	return nil
}
