package bpfvm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/conformance"
)

// conformanceDir holds a copy of the eBPF ISA conformance suite
// (bpf_conformance, see its LICENSE files).
const conformanceDir = "testdata/bpf_conformance"

func TestConformance(t *testing.T) {
	files, err := conformance.Files([]string{conformanceDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 313 {
		t.Fatalf("found %d conformance tests, want 313", len(files))
	}
	for _, cfg := range []struct {
		name   string
		engine bpfvm.Engine
		jit    bpfvm.JITOptions
	}{
		{"interp", bpfvm.EngineInterpreter, bpfvm.JITOptions{}},
		{"jit", bpfvm.EngineJIT, bpfvm.JITOptions{}},
		{"jit-blinded", bpfvm.EngineJIT, bpfvm.JITOptions{Blind: true}},
		{"jit-far-retpoline", bpfvm.EngineJIT, bpfvm.JITOptions{Far: true, Retpoline: true}},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			for _, f := range files {
				name := strings.TrimSuffix(filepath.Base(f), ".data")
				t.Run(name, func(t *testing.T) {
					tc, err := conformance.ParseFile(f)
					if err != nil {
						t.Fatal(err)
					}
					if err := tc.Run(conformance.NewEngineWithJIT(cfg.engine, cfg.jit)); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// The suite's negative tests with reserved fields set must be rejected.
func TestConformanceNegativeRaw(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(conformanceDir, "negative", "unused-*.data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no negative tests found")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tc, err := conformance.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conformance.NewEngine(bpfvm.EngineInterpreter)(tc.Raw, tc.Mem); err == nil {
				t.Fatal("program with reserved fields set was accepted")
			}
		})
	}
}
