package rewrite

import (
	"testing"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/jit/amd64"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// lookupHelper is bpf_map_lookup_elem as the runtime's helper does it for
// verified programs.
func lookupHelper(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	m, err := maps.FromHandle(r1, false)
	if err != nil {
		return 0, err
	}
	return vm.Addr(m.Lookup(vm.Ptr(r2), e.CPU)), nil
}

func cpuHelper(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) { return uint64(e.CPU), nil }

// BenchmarkInlineLookup compares, per engine and map type, 16 lookups of a
// present 4-byte key inlined with the same lookups as helper calls, each
// sequence in isolation. Reported: ns per lookup. The per-engine decision
// in DESIGN.md rests on whole programs (map_perf), where the interpreter's
// dispatch is shared with the rest of the program.
func BenchmarkInlineLookup(b *testing.B) {
	const n = 16
	lookup, _ := isa.HelperID("bpf_map_lookup_elem")
	cpuID, _ := isa.HelperID("bpf_get_smp_processor_id")
	types := []struct {
		name string
		typ  maps.Type
	}{
		{"array", maps.Array}, {"percpu_array", maps.PerCPUArray}, {"hash", maps.Hash},
		{"percpu_hash", maps.PerCPUHash}, {"lru_hash", maps.LRUHash}, {"cpu_id", 0},
	}
	for _, tc := range types {
		spec := maps.Spec{Name: tc.name, Type: tc.typ, KeySize: 4, ValueSize: 8, MaxEntries: 1024}
		var m maps.Map
		var call isa.Instruction
		var seq []isa.Instruction
		if tc.typ == 0 {
			call = isa.Instruction{Op: isa.OpCall, Imm: cpuID}
			seq = []isa.Instruction{{Op: isa.OpCPUIndex, Dst: isa.R0}}
		} else {
			var err error
			if m, err = maps.New(spec, maps.Options{NumCPU: 2}); err != nil {
				b.Fatal(err)
			}
			key := []byte{7, 0, 0, 0}
			if err := m.UpdateBytes(key, make([]byte, maps.ValueSizeBytes(spec, 2)), maps.UpdateAny); err != nil {
				b.Fatal(err)
			}
			call = isa.Instruction{Op: isa.OpCall, Imm: lookup}
			seq = lookupSeq(spec, InlineOptions{})
		}
		// r6 = map, r7 = key; n times: r1 = r6; r2 = r7; lookup.
		prog := func(body []isa.Instruction) []isa.Instruction {
			p := []isa.Instruction{
				{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R6, Src: isa.R1},
				{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R7, Src: isa.R2},
			}
			for range n {
				p = append(p,
					isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R1, Src: isa.R6},
					isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R2, Src: isa.R7})
				p = append(p, body...)
			}
			return append(p, isa.Instruction{Op: isa.OpExit})
		}
		helpers := func(id int32) vm.Helper {
			switch id {
			case lookup:
				return lookupHelper
			case cpuID:
				return cpuHelper
			}
			return nil
		}
		keyMem, err := vm.Alloc(8)
		if err != nil {
			b.Fatal(err)
		}
		*(*uint32)(vm.Ptr(keyMem.Addr())) = 7
		var handle uint64
		if m != nil {
			handle = m.Handle()
		}
		for _, variant := range []struct {
			name string
			body []isa.Instruction
		}{{"inline", seq}, {"helper", []isa.Instruction{call}}} {
			p := prog(variant.body)
			engines := map[string]engine{}
			ip, err := interp.New(p, helpers)
			if err != nil {
				b.Fatal(err)
			}
			engines["interp"] = ip
			if jp, err := amd64.Compile(p, helpers, amd64.Options{Modes: amd64.Unchecked}); err == nil {
				engines["jit"] = jp
			}
			for _, en := range []string{"interp", "jit"} {
				e := engines[en]
				if e == nil {
					continue
				}
				b.Run(tc.name+"/"+en+"/"+variant.name, func(b *testing.B) {
					env := &vm.Env{}
					stack, _ := vm.Alloc(vm.MaxFrames * vm.StackSize)
					defer stack.Free()
					env.Stack = vm.Region{Start: stack.Addr(), End: stack.Addr() + vm.MaxFrames*vm.StackSize, Writable: true}
					env.CPU = 1
					for b.Loop() {
						if _, err := e.Run(env, handle, keyMem.Addr(), 0); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/lookup")
				})
			}
		}
		keyMem.Free()
		if m != nil {
			m.Close()
		}
	}
}
