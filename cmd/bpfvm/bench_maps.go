package main

import (
	"runtime"

	"github.com/cilium/ebpf"
)

// mapBenchCases are the map_perf rows for the map types whose lookups are
// inlined besides arrays and hashes: 64 lookups per run, as the others.
func mapBenchCases(data []byte) []benchCase {
	return []benchCase{
		{name: "map_perf percpu_array (64)", file: "map_perf.o", prog: "percpu_array_lookup", data: data, fill: fillPerfMaps},
		{name: "map_perf percpu_hash (64)", file: "map_perf.o", prog: "percpu_hash_lookup", data: data, fill: fillPerfMaps},
		{name: "map_perf lru_hash (64)", file: "map_perf.o", prog: "lru_hash_lookup", data: data, fill: fillPerfMaps},
		// What a run costs without lookups: subtract it to compare the
		// lookups themselves.
		{name: "empty program (run cost)", file: "map_perf.o", prog: "empty", data: data},
	}
}

// fillPerfMaps fills the per-CPU and LRU maps of map_perf as fillPerf does
// the others: key k -> k+1 (on every CPU).
func fillPerfMaps(maps map[string]mapPutter) error {
	for k := uint32(0); k < 64; k++ {
		if err := maps["perf_lru_hash"].Put(k, uint64(k+1)); err != nil {
			return err
		}
		for _, name := range []string{"perf_percpu_array", "perf_percpu_hash"} {
			n, err := numCPU(maps[name])
			if err != nil {
				return err
			}
			vals := make([]uint64, n)
			for i := range vals {
				vals[i] = uint64(k + 1)
			}
			if err := maps[name].Put(k, vals); err != nil {
				return err
			}
		}
	}
	return nil
}

// numCPU is how many values a per-CPU map of m's kind holds per key: the
// kernel's possible CPUs, or bpfvm's default number of runners.
func numCPU(m mapPutter) (int, error) {
	if _, ok := m.(*ebpf.Map); ok {
		return ebpf.PossibleCPU()
	}
	return runtime.GOMAXPROCS(0), nil
}
