package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

func init() { addBenchTable(checksBenchTable) }

// checksBenchTable measures defense in depth (bpfvm.ProgramOptions.Checks):
// the main table's programs verified and rewritten, run with and without
// checked mode's run-time checks, on both engines, interleaved in one run.
func checksBenchTable() benchTable {
	col := func(name string, e bpfvm.Engine, c bpfvm.Checks) benchConfig {
		return benchConfig{name: name, opts: bpfvm.ProgramOptions{Engine: e, Checks: c}}
	}
	return benchTable{
		title: "Defense in depth: verified programs with run-time checks (Checks: on) and without",
		configs: []benchConfig{
			col("jit", bpfvm.EngineJIT, bpfvm.ChecksOff), col("jit-checks", bpfvm.EngineJIT, bpfvm.ChecksOn),
			col("interp", bpfvm.EngineInterpreter, bpfvm.ChecksOff), col("interp-checks", bpfvm.EngineInterpreter, bpfvm.ChecksOn),
		},
		ratios:      []benchRatio{{"jit checks/off", 1, 0}, {"interp checks/off", 3, 2}},
		cases:       mainBenchTable().cases,
		interleaved: true,
	}
}

// benchInterleaved loads the program in every configuration, then runs
// batches of about a millisecond of each in turn and returns each
// configuration's best batch mean (see bestBatch).
func benchInterleaved(spec *ebpf.CollectionSpec, c benchCase, configs []benchConfig, repeat int) ([]time.Duration, error) {
	progs := make([]*bpfvm.Program, len(configs))
	for i, cfg := range configs {
		coll, err := bpfvm.NewCollectionWithOptions(spec.Copy(), bpfvm.CollectionOptions{Programs: cfg.opts})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.name, err)
		}
		defer coll.Close()
		if err := fillMaps(c, coll.Maps); err != nil {
			return nil, err
		}
		p := coll.Programs[c.prog]
		if p == nil {
			return nil, errors.New("no program " + c.prog)
		}
		if cfg.opts.Engine == bpfvm.EngineJIT && p.Engine() != bpfvm.EngineJIT {
			return nil, fmt.Errorf("%s: the JIT did not compile the program", cfg.name)
		}
		progs[i] = p
	}
	// A batch size per configuration from a warm-up run.
	sizes := make([]int, len(progs))
	best := make([]time.Duration, len(progs))
	for i, p := range progs {
		_, d, err := p.Benchmark(c.data, max(repeat/100, 1), nil)
		if err != nil {
			return nil, err
		}
		sizes[i] = max(1, min(int(time.Millisecond/max(d, 1)), repeat/10))
		best[i] = d
	}
	rounds := min(max(repeat/sizes[0], 10), 1000)
	for range rounds {
		for i, p := range progs {
			_, d, err := p.Benchmark(c.data, sizes[i], nil)
			if err != nil {
				return nil, err
			}
			best[i] = min(best[i], max(d, 1))
		}
	}
	return best, nil
}
