package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/verifier"
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

// TestGlobalFunctionsAPI checks that func_info reaches the verifier from a
// ProgramSpec's instructions (btf.FuncMetadata, as cilium/ebpf users write
// it) and from ProgramOptions.Funcs for raw programs: the global function
// is verified on its own, where its int * argument may be NULL.
func TestGlobalFunctionsAPI(t *testing.T) {
	intT := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	g := &btf.Func{Name: "g", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: intT, Params: []btf.FuncParam{{Name: "p", Type: &btf.Pointer{Target: intT}}}}}
	main := &btf.Func{Name: "main", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: intT}}
	for _, c := range []struct {
		name, body string
		err        string
	}{
		{"checked", "r0 = 0\nif r1 == 0 goto o\nr0 = *(u32 *)(r1 +0)\no: exit", ""},
		{"unchecked", "r0 = *(u32 *)(r1 +0)\nexit", "R1 invalid mem access 'mem_or_null'"},
	} {
		src := "*(u64 *)(r10 -8) = 7\nr1 = r10\nr1 += -8\ncall g\nexit\ng: " + c.body
		insns, err := isa.Assemble(src)
		if err != nil {
			t.Fatal(err)
		}
		kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
		if err != nil {
			t.Fatal(err)
		}
		kinsns[0] = btf.WithFuncMetadata(kinsns[0], main)
		kinsns[5] = btf.WithFuncMetadata(kinsns[5], g)
		kinsns[5] = kinsns[5].WithSymbol("g")
		kinsns[3] = kinsns[3].WithReference("g")
		check := func(how string, p *bpfvm.Program, err error) {
			t.Helper()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s %s: %v, want %q", c.name, how, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, how, err)
			}
			defer p.Close()
			if !strings.Contains(p.VerifierLog, "Func#1 ('g') is global and assumed valid.") {
				t.Errorf("%s %s: g not verified as global:\n%s", c.name, how, p.VerifierLog)
			}
			if got := run(t, p, make([]byte, 14), nil); got.ret != 7 {
				t.Errorf("%s %s: returned %d, want 7", c.name, how, got.ret)
			}
		}
		p, err := bpfvm.NewProgramWithOptions(&ebpf.ProgramSpec{Name: "spec", Type: ebpf.XDP, Instructions: kinsns, License: "GPL"}, bpfvm.ProgramOptions{LogLevel: 1})
		check("spec", p, err)
		funcs := []verifier.FuncInfo{verifier.NewFuncInfo(0, main), verifier.NewFuncInfo(5, g)}
		p, err = bpfvm.NewRawProgram("raw", ebpf.XDP, insns, bpfvm.ProgramOptions{LogLevel: 1, Funcs: funcs})
		check("raw", p, err)
	}
}
