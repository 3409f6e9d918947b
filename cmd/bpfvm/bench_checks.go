package main

import "bpfvm"

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
		ratios: []benchRatio{{"jit checks/off", 1, 0}, {"interp checks/off", 3, 2}},
		cases:  mainBenchTable().cases,
	}
}
