package bpfvm_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"bpfvm"
	"bpfvm/conformance"
	"bpfvm/isa"
)

// conformanceDir holds a copy of the eBPF ISA conformance suite
// (bpf_conformance, see its LICENSE files).
const conformanceDir = "testdata/bpf_conformance"

func engineFunc(engine bpfvm.Engine) conformance.Engine {
	return func(prog []isa.Instruction, mem []byte) (uint64, error) {
		p, err := bpfvm.NewRawProgram("conformance", ebpf.UnspecifiedProgram, prog, bpfvm.ProgramOptions{
			Engine:  engine,
			Helpers: conformance.Helpers(),
			Budget:  1 << 24,
		})
		if err != nil {
			return 0, err
		}
		defer p.Close()
		if engine == bpfvm.EngineJIT && runtime.GOARCH == "amd64" && runtime.GOOS == "linux" && p.Engine() != bpfvm.EngineJIT {
			return 0, fmt.Errorf("the JIT did not compile the program (engine %s)", p.Engine())
		}
		res, err := p.Execute(&bpfvm.RunOptions{Data: mem})
		return res.R0, err
	}
}

func TestConformance(t *testing.T) {
	files, err := conformance.Files([]string{conformanceDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 313 {
		t.Fatalf("found %d conformance tests, want 313", len(files))
	}
	for _, engine := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		t.Run(engine.String(), func(t *testing.T) {
			for _, f := range files {
				name := strings.TrimSuffix(filepath.Base(f), ".data")
				t.Run(name, func(t *testing.T) {
					tc, err := conformance.ParseFile(f)
					if err != nil {
						t.Fatal(err)
					}
					if err := tc.Run(engineFunc(engine)); err != nil {
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
			if _, err := engineFunc(bpfvm.EngineInterpreter)(tc.Raw, tc.Mem); err == nil {
				t.Fatal("program with reserved fields set was accepted")
			}
		})
	}
}
