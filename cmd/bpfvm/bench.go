package main

import (
	"bytes"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
)

// benchdata holds the programs of the built-in suite (copies of
// testdata/map_perf.o and testdata/jhash.o, built from their C sources).
//
//go:embed benchdata/*.o
var benchdata embed.FS

// benchCase is one row of a table: a program and its input.
type benchCase struct {
	name, file, prog string
	data             []byte
	fill             func(maps map[string]mapPutter) error
	// spec builds the collection instead of reading file from benchdata
	// (e.g. with asmSpec).
	spec func() (*ebpf.CollectionSpec, error)
}

// benchConfig is a column of a table: how the program is loaded, or the
// running kernel's JIT through BPF_PROG_TEST_RUN.
type benchConfig struct {
	name   string
	opts   bpfvm.ProgramOptions
	kernel bool
}

// benchRatio is a ratio column: the time of config num over config den.
type benchRatio struct {
	name     string
	num, den int
}

// benchTable is one table of the suite: rows measured in every column.
type benchTable struct {
	title   string
	configs []benchConfig
	ratios  []benchRatio
	cases   []benchCase
	// interleaved measures the configurations' batches in turn, so that a
	// shared machine's load falls on all of them alike (benchInterleaved).
	interleaved bool
}

// benchTables are the suite's tables in print order, and benchRows the
// extra rows of the main table. Files other than bench.go extend the suite
// from their init functions with addBenchTable and addBenchRows; both
// lists are only written during initialization.
var (
	benchTables = []func() benchTable{mainBenchTable, callBenchTable}
	benchRows   []func() []benchCase
)

// addBenchTable appends a table (with its own columns) to the suite.
func addBenchTable(f func() benchTable) { benchTables = append(benchTables, f) }

// addBenchRows appends rows to the main table (interpreter, JIT, JIT without
// inlining, kernel).
func addBenchRows(f func() []benchCase) { benchRows = append(benchRows, f) }

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

func benchPacket(n int) []byte {
	pkt := make([]byte, n)
	for i := range pkt {
		pkt[i] = byte(i)
	}
	return pkt
}

// Columns shared by tables.
var (
	colInterp = benchConfig{name: "interp", opts: bpfvm.ProgramOptions{Engine: bpfvm.EngineInterpreter}}
	colJIT    = benchConfig{name: "jit", opts: bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT}}
	colKernel = benchConfig{name: "kernel", kernel: true}
)

// mainBenchTable: interpreter, JIT, JIT without inlined lookups, kernel.
func mainBenchTable() benchTable {
	pkt := benchPacket(1024)
	cases := []benchCase{
		{name: "map_perf array (64 lookups)", file: "map_perf.o", prog: "array_lookup", data: pkt[:64], fill: fillPerf},
		{name: "map_perf hash (64 lookups)", file: "map_perf.o", prog: "hash_lookup", data: pkt[:64], fill: fillPerf},
	}
	cases = append(cases, mapBenchCases(pkt[:64])...)
	cases = append(cases, []benchCase{
		{name: "jhash 1 KiB packet", file: "jhash.o", prog: "jhash_entry", data: pkt},
		{name: "ALU loop (1000 x 7 insns)", prog: "alu_loop", data: pkt[:64], spec: asmSpec("alu_loop", ebpf.XDP, aluLoopSrc)},
	}...)
	for _, f := range benchRows {
		cases = append(cases, f()...)
	}
	return benchTable{
		configs: []benchConfig{colInterp, colJIT,
			{name: "jit-noinline", opts: bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, NoInline: true}}, colKernel},
		ratios: []benchRatio{{"jit/kernel", 1, 3}, {"interp/jit", 0, 1}},
		cases:  cases,
	}
}

// aluLoopSrc is the JIT tests' ALU loop: 7 instructions per iteration.
const aluLoopSrc = `
	r0 = 0
	r1 = 1000
loop:
	r2 = r1
	r2 <<= 3
	r0 += r2
	r0 ^= r1
	r0 *= 3
	r1 += -1
	if r1 != 0 goto loop
	r0 &= 1
	exit`

// callBenchTable is seed 003's table for the kernel test_bpf program
// "BPF_MAXINSNS: Call heavy transformations" (4,093 helper calls in a
// 4,096-instruction program): the JIT calling native helper routines
// directly from near memory (rel32), from far memory (movabs + indirect
// call), from far memory through the retpoline thunk, the JIT leaving for
// Go at every call, the interpreter and the kernel.
func callBenchTable() benchTable {
	pkt := benchPacket(64)
	// Without inlining, so that the calls stay calls: the rewrite (like the
	// kernel) would turn bpf_get_smp_processor_id into a load.
	jit := func(name string, o bpfvm.JITOptions) benchConfig {
		return benchConfig{name: name, opts: bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, JIT: o, NoInline: true}}
	}
	return benchTable{
		title: "Call heavy (seed 003): ns per run of 4,093 helper calls (the kernel inlines get_smp_processor_id)",
		configs: []benchConfig{
			jit("jit near", bpfvm.JITOptions{}),
			jit("jit far", bpfvm.JITOptions{Far: true}),
			jit("jit far retpoline", bpfvm.JITOptions{Far: true, Retpoline: true}),
			jit("jit go-exit", bpfvm.JITOptions{NoNatives: true}),
			{name: "interp", opts: bpfvm.ProgramOptions{Engine: bpfvm.EngineInterpreter, NoInline: true}}, colKernel,
		},
		ratios: []benchRatio{{"far/near", 1, 0}, {"retpoline/near", 2, 0}, {"interp/near", 4, 0}, {"near/kernel", 0, 5}},
		cases: []benchCase{
			{name: "get_smp_processor_id", prog: "calls_cpu", data: pkt, spec: asmSpec("calls_cpu", ebpf.XDP, callHeavySrc("bpf_get_smp_processor_id"))},
			{name: "get_prandom_u32", prog: "calls_rnd", data: pkt, spec: asmSpec("calls_rnd", ebpf.XDP, callHeavySrc("bpf_get_prandom_u32"))},
		},
	}
}

// callHeavySrc is test_bpf's bpf_fill_maxinsns7 in eBPF: A = helper() 4,092
// times, X = A, A = helper(), A -= X.
func callHeavySrc(helper string) string {
	var b strings.Builder
	for range 4092 {
		fmt.Fprintf(&b, "call %s\n", helper)
	}
	fmt.Fprintf(&b, "r6 = r0\ncall %s\nr0 -= r6\nr0 &= 1\nexit\n", helper)
	return b.String()
}

// asmSpec builds a one-program collection from assembler text.
func asmSpec(name string, typ ebpf.ProgramType, src string) func() (*ebpf.CollectionSpec, error) {
	return func() (*ebpf.CollectionSpec, error) {
		prog, err := isa.Assemble(src)
		if err != nil {
			return nil, err
		}
		insns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(prog)), binary.LittleEndian, "linux")
		if err != nil {
			return nil, err
		}
		return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
			name: {Name: name, Type: typ, Instructions: insns, License: "GPL"},
		}}, nil
	}
}

// runBench runs the built-in benchmark suite: ns per run of each program in
// each configuration, including where bpf() is permitted the kernel's JIT
// through BPF_PROG_TEST_RUN, measured in one run (each figure the best
// batch mean, see bestBatch).
func runBench(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	repeat := fs.Int("repeat", 20000, "runs per measurement")
	filter := fs.String("run", "", "only rows whose name matches this regular expression")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *repeat <= 0 {
		return usageErr("--repeat must be positive")
	}
	re, err := regexp.Compile(*filter)
	if err != nil {
		return usageErr("--run: " + err.Error())
	}
	kernel := os.Getuid() == 0 && rlimit.RemoveMemlock() == nil
	matched := re.MatchString("loops") || re.MatchString("scaling")
	matchedTable := false // a table printed
	for i, f := range benchTables {
		t := f()
		var cases []benchCase
		for _, c := range t.cases {
			if re.MatchString(c.name) {
				cases = append(cases, c)
			}
		}
		if len(cases) == 0 {
			continue
		}
		matched, matchedTable = true, true
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if t.title != "" {
			fmt.Fprintln(stdout, t.title)
		}
		if err := printBenchTable(stdout, t, cases, kernel, *repeat); err != nil {
			return err
		}
	}
	if !matched {
		return fmt.Errorf("--run %q matches no benchmark", *filter)
	}
	if re.MatchString("scaling") {
		if matchedTable {
			fmt.Fprintln(stdout)
		}
		if err := benchScaling(stdout, kernel, *repeat); err != nil { // bench_scaling.go
			return err
		}
	}
	if !re.MatchString("loops") {
		return nil
	}
	if matchedTable || re.MatchString("scaling") {
		fmt.Fprintln(stdout)
	}
	return benchLoops(stdout, kernel, *repeat) // bench_loops.go
}

func printBenchTable(stdout io.Writer, t benchTable, cases []benchCase, kernel bool, repeat int) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "benchmark\t")
	for _, c := range t.configs {
		fmt.Fprintf(tw, "%s ns\t", c.name)
	}
	for _, r := range t.ratios {
		fmt.Fprintf(tw, "%s\t", r.name)
	}
	fmt.Fprintln(tw)
	for _, c := range cases {
		spec, err := c.load()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		row := make([]time.Duration, len(t.configs)) // 0: not measured
		if t.interleaved {
			if row, err = benchInterleaved(spec, c, t.configs, repeat); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
		for i, cfg := range t.configs {
			if t.interleaved {
				break
			}
			if cfg.kernel {
				if kernel {
					if d, err := benchKernel(spec, c, repeat); err == nil {
						row[i] = d
					}
				}
				continue
			}
			d, err := benchOurs(spec, c, cfg.opts, repeat)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", c.name, cfg.name, err)
			}
			row[i] = max(d, 1)
		}
		fmt.Fprintf(tw, "%s\t", c.name)
		for _, d := range row {
			if d == 0 {
				fmt.Fprint(tw, "n/a\t")
			} else {
				fmt.Fprintf(tw, "%d\t", d.Nanoseconds())
			}
		}
		for _, r := range t.ratios {
			if row[r.num] == 0 || row[r.den] == 0 {
				fmt.Fprint(tw, "n/a\t")
				continue
			}
			q := float64(row[r.num]) / float64(row[r.den])
			if q < 10 {
				fmt.Fprintf(tw, "%.2f\t", q)
			} else {
				fmt.Fprintf(tw, "%.1f\t", q)
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func (c benchCase) load() (*ebpf.CollectionSpec, error) {
	if c.spec != nil {
		return c.spec()
	}
	obj, err := benchdata.ReadFile("benchdata/" + c.file)
	if err != nil {
		return nil, err
	}
	return loader.LoadCollectionSpecFromReader(bytes.NewReader(obj), c.file)
}

// fillMaps gives the maps of a collection, ours or the kernel's, the case's
// contents.
func fillMaps[M mapPutter](c benchCase, ms map[string]M) error {
	if c.fill == nil {
		return nil
	}
	maps := make(map[string]mapPutter, len(ms))
	for name, m := range ms {
		maps[name] = m
	}
	return c.fill(maps)
}

func benchOurs(spec *ebpf.CollectionSpec, c benchCase, opts bpfvm.ProgramOptions, repeat int) (time.Duration, error) {
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts})
	if err != nil {
		return 0, err
	}
	defer coll.Close()
	if err := fillMaps(c, coll.Maps); err != nil {
		return 0, err
	}
	p := coll.Programs[c.prog]
	if p == nil {
		return 0, errors.New("no program " + c.prog)
	}
	if opts.Engine == bpfvm.EngineJIT && p.Engine() != bpfvm.EngineJIT {
		return 0, errors.New("the JIT did not compile the program")
	}
	if _, _, err := p.Benchmark(c.data, repeat/10+1, nil); err != nil { // warm up
		return 0, err
	}
	return bestBatch(repeat, func(n int) (time.Duration, error) {
		_, d, err := p.Benchmark(c.data, n, nil)
		return d, err
	})
}

// bestBatch spreads repeat runs over batches of about a millisecond (at
// least ten batches, at most 1,000) and returns the best batch's mean: on
// a shared machine other processes only ever add time, and short batches
// are the likeliest to run undisturbed. (The kernel's test run pauses its
// timer when it reschedules; this is the closest a user-space timer gets.)
func bestBatch(repeat int, run func(n int) (time.Duration, error)) (time.Duration, error) {
	est, err := run(max(repeat/100, 1))
	if err != nil {
		return 0, err
	}
	n := max(1, min(int(time.Millisecond/max(est, 1)), repeat/10))
	batches := min(max(repeat/n, 10), 1000)
	best := est
	for range batches {
		d, err := run(n)
		if err != nil {
			return 0, err
		}
		best = min(best, d)
	}
	return best, nil
}

func benchKernel(spec *ebpf.CollectionSpec, c benchCase, repeat int) (time.Duration, error) {
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return 0, err
	}
	defer coll.Close()
	if err := fillMaps(c, coll.Maps); err != nil {
		return 0, err
	}
	return bestBatch(repeat, func(n int) (time.Duration, error) {
		_, d, err := coll.Programs[c.prog].Benchmark(c.data, n, nil)
		return d, err
	})
}
