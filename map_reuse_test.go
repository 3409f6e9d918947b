package bpfvm_test

import (
	"testing"

	"github.com/bpfvm/bpfvm"
)

// TestMapReuseInOneRun deletes and inserts hash, per-CPU hash and LPM trie
// elements hundreds of times in one run of maps of four entries
// (testdata/map_reuse.c): the kernel reuses a deleted element at once, so
// no update fails, and neither may bpfvm's while its run is the only one
// (maps.Domain.Sole), on either engine, with and without run-time checks.
// stale_ptr writes through a pointer to a deleted element after the
// element has been reused: memory-safe, and checked mode must not fault.
func TestMapReuseInOneRun(t *testing.T) {
	progs := []string{"hash_churn", "hash_noprealloc_churn", "percpu_churn", "hash_full_replace", "lpm_reuse", "stale_ptr"}
	kern := kernelCollection(t, "testdata/mapreuse/map_reuse.o")
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, c := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			t.Run(e.String()+"/checks-"+c.String(), func(t *testing.T) {
				vm := loadVM(t, false, "testdata/mapreuse/map_reuse.o", bpfvm.CollectionOptions{
					Programs: bpfvm.ProgramOptions{Engine: e, Checks: c},
				})
				for _, name := range progs {
					// Twice: the second run starts from what the first
					// retired.
					for range 2 {
						checkRun(t, vm, kern, name, make([]byte, 64), nil, runOut{ret: 0})
					}
				}
			})
		}
	}
}
