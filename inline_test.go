package bpfvm_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
)

// inlineConfigs are the ways a verified program can run: each engine with
// and without inlined helpers.
var inlineConfigs = []bpfvm.ProgramOptions{
	{Engine: bpfvm.EngineInterpreter},
	{Engine: bpfvm.EngineInterpreter, NoInline: true},
	{Engine: bpfvm.EngineJIT},
	{Engine: bpfvm.EngineJIT, NoInline: true},
}

func configName(o bpfvm.ProgramOptions) string {
	if o.NoInline {
		return o.Engine.String() + "-noinline"
	}
	return o.Engine.String()
}

// kernelSpec loads spec into the kernel as an oracle, or returns nil where
// bpf() is not permitted.
func kernelSpec(t *testing.T, spec *ebpf.CollectionSpec) *ebpf.Collection {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Log("kernel oracle skipped")
		return nil
	}
	coll, err := ebpf.NewCollection(spec.Copy())
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
			t.Logf("kernel oracle skipped: %v", err)
			return nil
		}
		t.Fatalf("kernel load: %v", err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// Every map_perf program sums the same values whether its lookups are
// inlined or helper calls, on both engines, as in the kernel; per-CPU maps
// give each run its runner's values.
func TestInlinedMapPerf(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/map_perf.o")
	if err != nil {
		t.Fatal(err)
	}
	const ncpu = 3
	progs := []string{"array_lookup", "hash_lookup", "percpu_array_lookup", "percpu_hash_lookup", "lru_hash_lookup"}
	kern := kernelSpec(t, spec)
	for _, cfg := range inlineConfigs {
		t.Run(configName(cfg), func(t *testing.T) {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg, NumCPU: ncpu})
			if err != nil {
				t.Fatal(err)
			}
			defer coll.Close()
			for _, name := range progs {
				p := coll.Programs[name]
				if got, err := p.Run(&bpfvm.RunOptions{Data: packet(64)}); err != nil || got != 0 {
					t.Errorf("%s empty: %d, %v; want 0", name, got, err)
				}
				inlined := len(p.XlatedInstructions()) > len(p.Instructions())
				// The interpreter inlines only array lookups; the JIT
				// may be missing (other platforms) and fall back to it.
				wantInlined := !cfg.NoInline && (p.Engine() == bpfvm.EngineJIT || name == "array_lookup")
				if inlined != wantInlined {
					t.Errorf("%s: inlined %v, want %v", name, inlined, wantInlined)
				}
			}
			// Per-CPU values (k+1)*(cpu+1): a run on CPU c sums 2080*(c+1).
			for k := uint32(0); k < 64; k++ {
				for _, m := range []string{"perf_array", "perf_hash", "perf_lru_hash"} {
					if err := coll.Maps[m].Put(k, uint64(k+1)); err != nil {
						t.Fatal(err)
					}
				}
				vals := make([]uint64, ncpu)
				for c := range vals {
					vals[c] = uint64(k+1) * uint64(c+1)
				}
				for _, m := range []string{"perf_percpu_array", "perf_percpu_hash"} {
					if err := coll.Maps[m].Put(k, vals); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, name := range progs {
				var sums []uint32
				for c := range ncpu { // CPU 0: the caller's, here runner 0
					got, err := coll.Programs[name].Run(&bpfvm.RunOptions{Data: packet(64), CPU: uint32(c)})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Contains(sums, got) {
						sums = append(sums, got)
					}
				}
				slices.Sort(sums)
				want := []uint32{2080}
				if name == "percpu_array_lookup" || name == "percpu_hash_lookup" {
					want = []uint32{2080, 4160, 6240}
				}
				if !slices.Equal(sums, want) {
					t.Errorf("%s: sums %v, want %v", name, sums, want)
				}
			}
		})
	}
	if kern != nil {
		for k := uint32(0); k < 64; k++ {
			for _, m := range []string{"perf_array", "perf_hash", "perf_lru_hash"} {
				if err := kern.Maps[m].Put(k, uint64(k+1)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, name := range []string{"array_lookup", "hash_lookup", "lru_hash_lookup"} {
			if got, err := kern.Programs[name].Run(&ebpf.RunOptions{Data: packet(64)}); err != nil || got != 2080 {
				t.Errorf("kernel %s: %d, %v; want 2080", name, got, err)
			}
		}
	}
}

// keyLookupSpec is an XDP program that looks up the first keySize bytes of
// the packet in a map of the given type and returns the first 4 bytes of
// the value (per-CPU maps: minus the CPU's index, which it returns in the
// top byte), or 0 when the key is absent or the packet short.
func keyLookupSpec(typ ebpf.MapType, keySize, valueSize uint32) *ebpf.CollectionSpec {
	perCPU := typ == ebpf.PerCPUHash || typ == ebpf.LRUCPUHash || typ == ebpf.PerCPUArray
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, int32(keySize)),
		asm.JGT.Reg(asm.R4, asm.R3, "miss"),
	}
	for i := range int16(keySize) {
		insns = append(insns,
			asm.LoadMem(asm.R5, asm.R2, i, asm.Byte),
			asm.StoreMem(asm.RFP, -136+i, asm.R5, asm.Byte))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -136),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "miss"),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
	)
	if perCPU {
		insns = append(insns,
			asm.Mov.Reg(asm.R6, asm.R0),
			asm.FnGetSmpProcessorId.Call(),
			asm.Sub.Reg(asm.R6, asm.R0),
			asm.LSh.Imm(asm.R0, 24),
			asm.Or.Reg(asm.R0, asm.R6),
		)
	}
	insns = append(insns,
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("miss"),
		asm.Return(),
	)
	insns[0] = insns[0].WithSymbol("lookup")
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"m": {Name: "m", Type: typ, KeySize: keySize, ValueSize: valueSize, MaxEntries: 64}},
		Programs: map[string]*ebpf.ProgramSpec{"lookup": {
			Name: "lookup", Type: ebpf.XDP, License: "GPL", Instructions: insns,
		}},
	}
}

// Lookups of keys of many sizes in every hash map type agree on every
// configuration and with the kernel: present and absent keys, after
// deletes and replacing updates; per-CPU maps give each runner its value
// (and the kernel the value of the CPU the test run happened on).
func TestInlinedHashLookupKeySizes(t *testing.T) {
	const ncpu = 3
	types := []ebpf.MapType{ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash}
	sizes := []uint32{1, 3, 4, 5, 7, 8, 9, 12, 13, 16, 20, 31, 33, 64, 65, 100}
	if testing.Short() {
		sizes = []uint32{1, 4, 7, 8, 13, 33, 65}
	}
	for _, typ := range types {
		for _, ks := range sizes {
			t.Run(fmt.Sprintf("%v/key%d", typ, ks), func(t *testing.T) {
				checkKeyLookups(t, keyLookupSpec(typ, ks, 12), typ, ks, ncpu)
			})
		}
	}
}

func checkKeyLookups(t *testing.T, spec *ebpf.CollectionSpec, typ ebpf.MapType, ks uint32, ncpu int) {
	perCPU := typ == ebpf.PerCPUHash || typ == ebpf.LRUCPUHash
	kern := kernelSpec(t, spec)
	kernCPU := 1
	if kern != nil && perCPU {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			t.Fatal(err)
		}
		kernCPU = n
	}
	keys := make([][]byte, 40)
	for i := range keys {
		keys[i] = make([]byte, ks)
		for j := range keys[i] {
			keys[i][j] = byte(i*7 + j*3)
		}
		keys[i][len(keys[i])-1] = byte(i)
	}
	// put stores value v for keys[i]; per-CPU maps get v+c for CPU c.
	put := func(m interface{ Put(k, v any) error }, n int, k []byte, v uint32) {
		val := make([]byte, 12)
		val[0], val[1] = byte(v), byte(v>>8)
		if !perCPU {
			if err := m.Put(k, val); err != nil {
				t.Fatal(err)
			}
			return
		}
		vals := make([][]byte, n)
		for c := range vals {
			vals[c] = make([]byte, 12)
			vals[c][0], vals[c][1] = byte(v+uint32(c)), byte((v+uint32(c))>>8)
		}
		if err := m.Put(k, vals); err != nil {
			t.Fatal(err)
		}
	}
	var colls []*bpfvm.Collection
	for _, cfg := range inlineConfigs {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg, NumCPU: ncpu})
		if err != nil {
			t.Fatal(err)
		}
		defer coll.Close()
		colls = append(colls, coll)
	}
	// want is what a lookup of key i returns: its value, 0 when absent.
	want := make([]uint32, len(keys))
	fill := func(i int, v uint32) {
		want[i] = v
		for _, c := range colls {
			put(c.Maps["m"], ncpu, keys[i], v)
		}
		if kern != nil {
			put(kern.Maps["m"], kernCPU, keys[i], v)
		}
	}
	for i := range 30 {
		fill(i, uint32(100+i))
	}
	check := func(stage string) {
		t.Helper()
		for i, k := range keys {
			data := append(slices.Clone(k), make([]byte, 64)...)
			for ci, c := range colls {
				seen := map[uint32]bool{}
				for cpu := range ncpu { // CPU 0: the caller's, here runner 0
					got, err := c.Programs["lookup"].Run(&bpfvm.RunOptions{Data: data, CPU: uint32(cpu)})
					if err != nil {
						t.Fatal(err)
					}
					cpu := got >> 24
					seen[cpu] = true
					if got&0xffffff != want[i] || cpu >= uint32(ncpu) || !perCPU && cpu != 0 {
						t.Errorf("%s: %s: key %d: got %#x, want %d", stage, configName(inlineConfigs[ci]), i, got, want[i])
					}
				}
				if perCPU && want[i] != 0 && len(seen) != ncpu {
					t.Errorf("%s: %s: key %d: runs saw CPUs %v", stage, configName(inlineConfigs[ci]), i, seen)
				}
			}
			if kern != nil {
				got, err := kern.Programs["lookup"].Run(&ebpf.RunOptions{Data: data})
				if err != nil || got&0xffffff != want[i] {
					t.Errorf("%s: kernel: key %d: %d, %v; want %d", stage, i, got, err, want[i])
				}
			}
		}
	}
	check("filled")
	for i := range keys {
		switch i % 3 {
		case 0:
			want[i] = 0
			for _, c := range colls {
				c.Maps["m"].Delete(keys[i])
			}
			if kern != nil {
				kern.Maps["m"].Delete(keys[i])
			}
		case 1:
			fill(i, uint32(1000+i))
		}
	}
	check("updated")
}

// An LRU map evicts the keys programs did not look up: inlined lookups set
// the referenced mark as the helper does.
func TestInlinedLRUMarks(t *testing.T) {
	spec := keyLookupSpec(ebpf.LRUHash, 4, 8)
	spec.Maps["m"].MaxEntries = 32
	for _, cfg := range inlineConfigs {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg, NumCPU: 1})
		if err != nil {
			t.Fatal(err)
		}
		m := coll.Maps["m"]
		for k := uint32(0); k < 32; k++ {
			if err := m.Put(k, uint64(k+1)); err != nil {
				t.Fatal(err)
			}
		}
		for k := uint32(0); k < 32; k += 2 {
			data := append([]byte{byte(k), 0, 0, 0}, make([]byte, 64)...)
			if got, err := coll.Programs["lookup"].Run(&bpfvm.RunOptions{Data: data}); err != nil || got != k+1 {
				t.Fatalf("%s: lookup %d: %d, %v", configName(cfg), k, got, err)
			}
		}
		for k := uint32(100); k < 116; k++ {
			if err := m.Put(k, uint64(k)); err != nil {
				t.Fatal(err)
			}
		}
		for k := uint32(0); k < 32; k++ {
			var v uint64
			err := m.Lookup(k, &v)
			if present := err == nil; present != (k%2 == 0) {
				t.Errorf("%s: key %d present %v after eviction, want %v", configName(cfg), k, present, k%2 == 0)
			}
		}
		coll.Close()
	}
}

// bpf_get_smp_processor_id, inlined or not, returns the runner's index.
func TestInlinedProcessorID(t *testing.T) {
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"cpu": {
		Name: "cpu", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.FnGetSmpProcessorId.Call(), asm.Return()},
	}}}
	const ncpu = 4
	for _, cfg := range inlineConfigs {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg, NumCPU: ncpu})
		if err != nil {
			t.Fatal(err)
		}
		p := coll.Programs["cpu"]
		if inlined := len(p.XlatedInstructions()) == 2 && p.XlatedInstructions()[0].Op != 0x85; inlined == cfg.NoInline {
			t.Errorf("%s: inlined %v", configName(cfg), inlined)
		}
		var got []uint32
		for c := range ncpu { // CPU 0: the caller's, here runner 0
			r, err := p.Run(&bpfvm.RunOptions{Data: packet(64), CPU: uint32(c)})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		slices.Sort(got)
		if !slices.Equal(got, []uint32{0, 1, 2, 3}) {
			t.Errorf("%s: CPUs %v, want each of 0-3 once", configName(cfg), got)
		}
		coll.Close()
	}
}

// Lookups through arrays and hashes of maps (outer lookup inlined, then the
// inner one) agree on every configuration and with the kernel.
func TestInlinedMapOfMaps(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.ArrayOfMaps, ebpf.HashOfMaps} {
		inner := &ebpf.MapSpec{Name: "inner", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}
		spec := &ebpf.CollectionSpec{
			Maps: map[string]*ebpf.MapSpec{
				"outer": {Name: "outer", Type: typ, KeySize: 4, ValueSize: 4, MaxEntries: 4, InnerMap: inner},
				"a":     {Name: "a", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1},
				"b":     {Name: "b", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1},
			},
			Programs: map[string]*ebpf.ProgramSpec{"lookup": {
				Name: "lookup", Type: ebpf.XDP, License: "GPL",
				// outer[packet[0]][0], or 0.
				Instructions: asm.Instructions{
					asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
					asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
					asm.Mov.Reg(asm.R4, asm.R2),
					asm.Add.Imm(asm.R4, 1),
					asm.JGT.Reg(asm.R4, asm.R3, "miss"),
					asm.LoadMem(asm.R5, asm.R2, 0, asm.Byte),
					asm.StoreMem(asm.RFP, -4, asm.R5, asm.Word),
					asm.LoadMapPtr(asm.R1, 0).WithReference("outer"),
					asm.Mov.Reg(asm.R2, asm.RFP),
					asm.Add.Imm(asm.R2, -4),
					asm.FnMapLookupElem.Call(),
					asm.JEq.Imm(asm.R0, 0, "miss"),
					asm.StoreImm(asm.RFP, -8, 0, asm.Word),
					asm.Mov.Reg(asm.R1, asm.R0),
					asm.Mov.Reg(asm.R2, asm.RFP),
					asm.Add.Imm(asm.R2, -8),
					asm.FnMapLookupElem.Call(),
					asm.JEq.Imm(asm.R0, 0, "miss"),
					asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
					asm.Return(),
					asm.Mov.Imm(asm.R0, 0).WithSymbol("miss"),
					asm.Return(),
				},
			}},
		}
		// Slots 1 and 3 hold maps a (value 11) and b (value 22).
		want := map[byte]uint32{0: 0, 1: 11, 2: 0, 3: 22, 200: 0}
		fill := func(outer, a, b interface{ Put(k, v any) error }, fd func(string) any) {
			if err := a.Put(uint32(0), uint32(11)); err != nil {
				t.Fatal(err)
			}
			if err := b.Put(uint32(0), uint32(22)); err != nil {
				t.Fatal(err)
			}
			if err := outer.Put(uint32(1), fd("a")); err != nil {
				t.Fatal(err)
			}
			if err := outer.Put(uint32(3), fd("b")); err != nil {
				t.Fatal(err)
			}
		}
		for _, cfg := range inlineConfigs {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg})
			if err != nil {
				t.Fatal(err)
			}
			fill(coll.Maps["outer"], coll.Maps["a"], coll.Maps["b"], func(n string) any { return coll.Maps[n].ID() })
			// On the JIT both lookups are inlined; on the interpreter the
			// array ones.
			calls := 0
			for _, ins := range coll.Programs["lookup"].XlatedInstructions() {
				if ins.Op == isa.OpCall {
					calls++
				}
			}
			wantCalls := 0
			switch {
			case cfg.NoInline:
				wantCalls = 2
			case coll.Programs["lookup"].Engine() == bpfvm.EngineInterpreter && typ == ebpf.HashOfMaps:
				wantCalls = 1
			}
			if calls != wantCalls {
				t.Errorf("%v %s: %d calls left, want %d", typ, configName(cfg), calls, wantCalls)
			}
			for k, w := range want {
				got, err := coll.Programs["lookup"].Run(&bpfvm.RunOptions{Data: append([]byte{k}, make([]byte, 63)...)})
				if err != nil || got != w {
					t.Errorf("%v %s: outer[%d]: %d, %v; want %d", typ, configName(cfg), k, got, err, w)
				}
			}
			coll.Close()
		}
		if kern := kernelSpec(t, spec); kern != nil {
			fill(kern.Maps["outer"], kern.Maps["a"], kern.Maps["b"], func(n string) any { return kern.Maps[n] })
			for k, w := range want {
				got, err := kern.Programs["lookup"].Run(&ebpf.RunOptions{Data: append([]byte{k}, make([]byte, 63)...)})
				if err != nil || got != w {
					t.Errorf("%v kernel: outer[%d]: %d, %v; want %d", typ, k, got, err, w)
				}
			}
		}
	}
}
