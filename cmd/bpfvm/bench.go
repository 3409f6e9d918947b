package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"bpfvm"
	"bpfvm/loader"
)

// benchdata holds the programs of the built-in suite (copies of
// testdata/map_perf.o and testdata/jhash.o, built from their C sources).
//
//go:embed benchdata/*.o
var benchdata embed.FS

type benchCase struct {
	name, file, prog string
	data             []byte
	fill             func(maps map[string]mapPutter) error
}

// mapPutter is what filling a map needs from bpfvm's and the kernel's maps.
type mapPutter interface {
	Put(key, value any) error
}

func fillPerf(maps map[string]mapPutter) error {
	for k := uint32(0); k < 64; k++ {
		for _, m := range []string{"perf_array", "perf_hash"} {
			if err := maps[m].Put(k, uint64(k+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

func benchCases() []benchCase {
	pkt := make([]byte, 1024)
	for i := range pkt {
		pkt[i] = byte(i)
	}
	return []benchCase{
		{"map_perf array (64 lookups)", "map_perf.o", "array_lookup", pkt[:64], fillPerf},
		{"map_perf hash (64 lookups)", "map_perf.o", "hash_lookup", pkt[:64], fillPerf},
		{"jhash 1 KiB packet", "jhash.o", "jhash_entry", pkt, nil},
	}
}

// runBench runs the built-in benchmark suite: ns per run on the
// interpreter, the JIT, the JIT without inlined lookups and, where bpf() is
// permitted, the kernel's JIT through BPF_PROG_TEST_RUN, measured in one run.
func runBench(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	repeat := fs.Int("repeat", 20000, "runs per measurement")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *repeat <= 0 {
		return usageErr("--repeat must be positive")
	}
	kernel := os.Getuid() == 0 && rlimit.RemoveMemlock() == nil
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tinterp ns\tjit ns\tjit-noinline ns\tkernel ns\tjit/kernel\tinterp/jit\t")
	for _, c := range benchCases() {
		obj, err := benchdata.ReadFile("benchdata/" + c.file)
		if err != nil {
			return err
		}
		spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(obj), c.file)
		if err != nil {
			return err
		}
		var row [4]time.Duration
		configs := []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {Engine: bpfvm.EngineJIT, NoInline: true}}
		for i, opts := range configs {
			d, err := benchOurs(spec, c, opts, *repeat)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			row[i] = d
		}
		kcol, ratio := "n/a", "n/a"
		if kernel {
			if d, err := benchKernel(spec, c, *repeat); err == nil {
				row[3] = d
				kcol = fmt.Sprint(d.Nanoseconds())
				if d > 0 {
					ratio = fmt.Sprintf("%.2f", float64(row[1])/float64(d))
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%.1f\t\n", c.name, row[0].Nanoseconds(), row[1].Nanoseconds(), row[2].Nanoseconds(), kcol, ratio, float64(row[0])/float64(max(row[1], 1)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return benchLoops(stdout, kernel, *repeat) // bench_loops.go
}

func benchOurs(spec *ebpf.CollectionSpec, c benchCase, opts bpfvm.ProgramOptions, repeat int) (time.Duration, error) {
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts})
	if err != nil {
		return 0, err
	}
	defer coll.Close()
	if c.fill != nil {
		maps := map[string]mapPutter{}
		for name, m := range coll.Maps {
			maps[name] = m
		}
		if err := c.fill(maps); err != nil {
			return 0, err
		}
	}
	p := coll.Programs[c.prog]
	if p == nil {
		return 0, errors.New("no program " + c.prog)
	}
	if _, _, err := p.Benchmark(c.data, repeat/10+1, nil); err != nil { // warm up
		return 0, err
	}
	_, d, err := p.Benchmark(c.data, repeat, nil)
	return d, err
}

func benchKernel(spec *ebpf.CollectionSpec, c benchCase, repeat int) (time.Duration, error) {
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return 0, err
	}
	defer coll.Close()
	if c.fill != nil {
		maps := map[string]mapPutter{}
		for name, m := range coll.Maps {
			maps[name] = m
		}
		if err := c.fill(maps); err != nil {
			return 0, err
		}
	}
	_, d, err := coll.Programs[c.prog].Benchmark(c.data, repeat, nil)
	return d, err
}
