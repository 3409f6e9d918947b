package bpfvm_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"bpfvm"
	"bpfvm/loader"
)

// TestGlobalFunctionsObject loads testdata/global_funcs.o, whose global
// functions the verifier checks once each against their BTF prototypes
// (func_info carried from the ELF), and runs it on both engines, checked
// and verified, against the kernel.
func TestGlobalFunctionsObject(t *testing.T) {
	const file = "testdata/global_funcs.o"
	kern := kernelCollection(t, file)
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	const want = 100<<8 | 3
	ff := bytes.Repeat([]byte{0xff}, 16)
	const wantFF = 16320<<8 | 0xff
	for _, engine := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		t.Run(engine.String(), func(t *testing.T) {
			modes(t, func(t *testing.T, noVerify bool) {
				spec, err := loader.LoadCollectionSpec(file)
				if err != nil {
					t.Fatal(err)
				}
				opts := bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoVerify: noVerify, Engine: engine, LogLevel: 1 | 4}}
				vm, err := bpfvm.NewCollectionWithOptions(spec, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer vm.Close()
				p := vm.Programs["global_funcs"]
				if !noVerify {
					if !p.Verified() {
						t.Fatal("not verified")
					}
					for _, fn := range []string{"first_bytes", "sum", "count", "drop_two", "mix"} {
						if !strings.Contains(p.VerifierLog, "('"+fn+"') is global and assumed valid.") || !strings.Contains(p.VerifierLog, "Validating "+fn+"()") {
							t.Errorf("%s not verified as a global function:\n%s", fn, p.VerifierLog)
						}
					}
					if k, ok := kernelProcessedObject(t, file, "global_funcs"); ok && p.Stats().Processed > k {
						t.Errorf("processed %d instructions, the kernel %d", p.Stats().Processed, k)
					}
				}
				got := run(t, p, data, nil)
				if got.ret != want {
					t.Errorf("returned %d, want %d", got.ret, want)
				}
				if kr, ok := kernelRun(t, kern, "global_funcs", data, nil); ok && kr.ret != got.ret {
					t.Errorf("returned %d, the kernel %d", got.ret, kr.ret)
				}
				if got := run(t, p, ff, nil); got.ret != wantFF {
					t.Errorf("returned %d, want %d", got.ret, wantFF)
				}
				if kr, ok := kernelRun(t, kern, "global_funcs", ff, nil); ok && kr.ret != wantFF {
					t.Errorf("the kernel returned %d, want %d", kr.ret, wantFF)
				}
				var c uint64
				if err := vm.Maps["counters"].Lookup(uint32(0), &c); err != nil {
					t.Fatal(err)
				}
				if c != 100+16320 {
					t.Errorf("counter %d, want %d", c, 100+16320)
				}
			})
		})
	}
}

// kernelProcessedObject returns the instructions the running kernel
// processed verifying one program of an object; ok is false without bpf().
func kernelProcessedObject(t *testing.T, file, name string) (int, bool) {
	t.Helper()
	if kernelCollection(t, file) == nil {
		return 0, false
	}
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	for _, l := range strings.Split(coll.Programs[name].VerifierLog, "\n") {
		var n int
		if _, err := fmt.Sscanf(l, "processed %d insns", &n); err == nil {
			return n, true
		}
	}
	return 0, false
}
