package bpfvm_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/vm"
)

// Every program of the C corpus that loads runs clean with the run-time
// checks on (ProgramOptions.Checks), verified, rewritten and inlined as the
// engines run it, on both engines, and gives the result it gives without
// them: checked mode understands the rewritten programs, and nothing the
// verifier accepted touches memory outside what checked mode grants.
func TestChecksCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.o")
	more, _ := filepath.Glob("examples/*/*.o")
	files = append(files, more...)
	pkts := [][]byte{make([]byte, 14), bytes.Repeat([]byte{0x45, 0x08, 0x00, 0x11, 0x06, 0xff}, 20), bytes.Repeat([]byte{0x86, 0xdd, 0x08, 0x00, 0x45, 0x00, 0x00}, 200)}
	for _, file := range files {
		spec, err := loader.LoadCollectionSpec(file)
		if err != nil {
			continue
		}
		var names []string
		for name, p := range spec.Programs {
			if p.Type != ebpf.UnspecifiedProgram && p.SectionName != "host/policy" {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			t.Run(filepath.Base(file)+"/"+name, func(t *testing.T) {
				// Timed may_goto loops run for a span of time: their
				// results depend on the clock. One run each, not compared.
				pkts, compare := pkts, true
				if strings.HasPrefix(name, "cond_break") || name == "forever" {
					pkts, compare = pkts[:1], false
				}
				for _, engine := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
					var results [2][]string
					for i, checks := range []bpfvm.Checks{bpfvm.ChecksOff, bpfvm.ChecksOn} {
						one := unpinned(spec.Copy())
						for other := range one.Programs {
							if other != name {
								delete(one.Programs, other)
							}
						}
						coll, err := bpfvm.NewCollectionWithOptions(one, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: engine, Checks: checks}, NumCPU: 1})
						if err != nil {
							var ve *bpfvm.VerifierError
							if errors.As(err, &ve) {
								t.Skip("rejected")
							}
							if errors.Is(err, vm.ErrHelper) {
								t.Skipf("a helper bpfvm lacks: %v", err)
							}
							t.Fatalf("load: %v", err)
						}
						p := coll.Programs[name]
						if !p.Verified() {
							coll.Close()
							t.Skip("not verified")
						}
						for _, pkt := range pkts {
							res, err := p.Execute(&bpfvm.RunOptions{Data: pkt, DataOut: make([]byte, len(pkt)+1024)})
							if errors.Is(err, vm.ErrMemory) {
								t.Fatalf("%s, checks %s: %v", engine, checks, err)
							}
							results[i] = append(results[i], summary(res, err))
						}
						coll.Close()
					}
					for k := range results[0] {
						if !compare {
							break
						}
						if results[0][k] != results[1][k] {
							t.Errorf("%s, packet %d: unchecked %s, checked %s", engine, k, results[0][k], results[1][k])
						}
					}
				}
			})
		}
	}
}

func summary(res bpfvm.Result, err error) string {
	if err != nil {
		return "error"
	}
	return string(rune('0'+res.R0%10)) + "/" + string(rune('0'+res.DataSize%10))
}
