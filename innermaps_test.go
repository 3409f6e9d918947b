package bpfvm_test

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/maps"
)

// innerSpec is a collection with a map of maps outer of type typ, whose
// template is tmpl, and an inner candidate of its own; program "bump" adds 1 to
// outer[0][key] (checking both lookups) and returns the new value, or
// 1000 when either lookup misses.
func innerSpec(typ ebpf.MapType, tmpl, own *ebpf.MapSpec, key int32) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"outer": {Name: "outer", Type: typ, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: tmpl},
			"own":   own,
		},
		Programs: map[string]*ebpf.ProgramSpec{"bump": {
			Name: "bump", Type: ebpf.XDP, License: "GPL",
			Instructions: asm.Instructions{
				asm.StoreImm(asm.RFP, -4, 0, asm.Word),
				asm.LoadMapPtr(asm.R1, 0).WithReference("outer"),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -4),
				asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, "miss"),
				asm.StoreImm(asm.RFP, -8, int64(key), asm.Word),
				asm.Mov.Reg(asm.R1, asm.R0),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -8),
				asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, "miss"),
				asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
				asm.Add.Imm(asm.R1, 1),
				asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
				asm.Mov.Reg(asm.R0, asm.R1),
				asm.Return(),
				asm.Mov.Imm(asm.R0, 1000).WithSymbol("miss"),
				asm.Return(),
			},
		}},
	}
}

// An inner map must match everything the programs of the outer map rely
// on: a per-CPU inner map from a collection with another number of CPUs is
// refused with EINVAL (its values would be indexed past their slots), one
// with the same number works; an array's max_entries must be the
// template's unless the template has BPF_F_INNER_MAP, and then a constant
// key in range of the template but not of the inner map misses. On both
// engines, inlined or not, and in checked mode.
func TestInnerMapCompatibility(t *testing.T) {
	pcpu := &ebpf.MapSpec{Name: "own", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	arr := func(n uint32, flags uint32) *ebpf.MapSpec {
		return &ebpf.MapSpec{Name: "own", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: n, Flags: flags}
	}
	const innerMap = maps.FlagInnerMap
	for _, c := range []struct {
		name       string
		tmpl       *ebpf.MapSpec
		key        int32
		cpus       [2]int // the outer map's collection, the inner map's
		inner      *ebpf.MapSpec
		err        string // "" when the inner map is accepted
		want, runs uint64 // return value of the last of runs (1000: miss)
	}{
		{name: "percpu same cpus", tmpl: pcpu, cpus: [2]int{2, 2}, inner: pcpu, want: 3, runs: 6},
		{name: "percpu more cpus", tmpl: pcpu, cpus: [2]int{2, 8}, inner: pcpu, err: "values for 8 CPUs, want 2"},
		{name: "percpu fewer cpus", tmpl: pcpu, cpus: [2]int{8, 2}, inner: pcpu, err: "values for 2 CPUs, want 8"},
		{name: "percpu one cpu", tmpl: pcpu, cpus: [2]int{3, 1}, inner: pcpu, err: "values for 1 CPUs, want 3"},
		{name: "array other cpus", tmpl: arr(4, 0), cpus: [2]int{2, 8}, inner: arr(4, 0), want: 5, runs: 5},
		{name: "array other max_entries", tmpl: arr(4, 0), cpus: [2]int{2, 2}, inner: arr(8, 0), err: "max_entries 8, want 4"},
		{name: "inner-map array smaller, key in range", tmpl: arr(4, innerMap), key: 0, cpus: [2]int{2, 2}, inner: arr(1, innerMap), want: 2, runs: 2},
		{name: "inner-map array smaller, key past it", tmpl: arr(4, innerMap), key: 2, cpus: [2]int{2, 2}, inner: arr(1, innerMap), want: 1000, runs: 2},
		{name: "inner-map array bigger", tmpl: arr(4, innerMap), key: 6, cpus: [2]int{2, 2}, inner: arr(8, innerMap), want: 3, runs: 3},
		{name: "inner-map array without the flag", tmpl: arr(4, innerMap), cpus: [2]int{2, 2}, inner: arr(4, 0), err: "flags 0x0, want 0x1000"},
	} {
		if c.cpus[0] == c.cpus[1] {
			// The kernel has one number of CPUs: compare the rest.
			kernelInnerPut(t, c.name, c.tmpl, c.inner, c.err == "")
		}
		configs := append([]bpfvm.ProgramOptions{{NoVerify: true}}, inlineConfigs...)
		for _, typ := range []ebpf.MapType{ebpf.ArrayOfMaps, ebpf.HashOfMaps} {
			for _, o := range configs {
				t.Run(c.name+"/"+typ.String()+"/"+configName(o)+checkedName(o), func(t *testing.T) {
					a, err := bpfvm.NewCollectionWithOptions(innerSpec(typ, c.tmpl, c.tmpl, c.key), bpfvm.CollectionOptions{Programs: o, NumCPU: c.cpus[0]})
					if err != nil {
						t.Fatal(err)
					}
					defer a.Close()
					b, err := bpfvm.NewCollectionWithOptions(innerSpec(typ, c.tmpl, c.inner, c.key), bpfvm.CollectionOptions{Programs: o, NumCPU: c.cpus[1]})
					if err != nil {
						t.Fatal(err)
					}
					defer b.Close()
					err = a.Maps["outer"].Put(uint32(0), b.Maps["own"])
					if c.err != "" {
						if !errors.Is(err, maps.ErrInvalid) || !strings.Contains(err.Error(), c.err) {
							t.Fatalf("put: %v, want EINVAL saying %q", err, c.err)
						}
						// Nothing was stored: the program misses.
						if r, err := a.Programs["bump"].Run(&bpfvm.RunOptions{Data: make([]byte, 64)}); r != 1000 || err != nil {
							t.Errorf("run after a refused put: %d, %v", r, err)
						}
						return
					}
					if err != nil {
						t.Fatalf("put: %v", err)
					}
					if o.NoVerify {
						// Checked mode lets a program touch the maps of its
						// own collection only, not an inner map from another
						// (reported on issue #11).
						return
					}
					var r uint32
					for i := range c.runs { // on CPUs 0 (the caller's, runner 0) and 1 in turn
						if r, err = a.Programs["bump"].Run(&bpfvm.RunOptions{Data: make([]byte, 64), CPU: uint32(i % 2)}); err != nil {
							t.Fatal(err)
						}
					}
					if uint64(r) != c.want {
						t.Errorf("last of %d runs returned %d, want %d", c.runs, r, c.want)
					}
				})
			}
		}
	}
}

func checkedName(o bpfvm.ProgramOptions) string {
	if o.NoVerify {
		return "-checked"
	}
	return ""
}

// kernelInnerPut stores an inner map made from inner into a kernel array of
// maps with template tmpl and checks that the kernel accepts it when ok and
// refuses it with EINVAL otherwise; it does nothing without bpf().
func kernelInnerPut(t *testing.T, name string, tmpl, inner *ebpf.MapSpec, ok bool) {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return
	}
	outer, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: tmpl.Copy()})
	if err != nil {
		t.Logf("kernel: %v", err)
		return
	}
	defer outer.Close()
	in, err := ebpf.NewMap(inner.Copy())
	if err != nil {
		t.Fatalf("%s: kernel inner map: %v", name, err)
	}
	defer in.Close()
	err = outer.Put(uint32(0), in)
	if ok != (err == nil) || err != nil && !errors.Is(err, syscall.EINVAL) {
		t.Errorf("%s: kernel put: %v, want accepted %v (or EINVAL)", name, err, ok)
	}
}
