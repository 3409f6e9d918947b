package bpfvm_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// dropinObject is the bpf2go test's program (internal/bpf2gotest): xdp_count
// counts packets in `counts` and tail-calls xdp_verdict through `jumps`.
const dropinObject = "internal/bpf2gotest/kernel_bpfel.o"

// The objects of dropinObject as bpf2go generates them, for P, M = bpfvm's
// or cilium/ebpf's Program and Map: embedded structs of tagged fields.
type (
	dropinPrograms[P any] struct {
		XdpCount   P `ebpf:"xdp_count"`
		XdpVerdict P `ebpf:"xdp_verdict"`
	}
	dropinMaps[M any] struct {
		Counts M `ebpf:"counts"`
		Jumps  M `ebpf:"jumps"`
	}
	dropinObjects[P, M any] struct {
		dropinPrograms[P]
		dropinMaps[M]
	}
)

// kernelAllowed reports whether bpf() may load programs here.
func kernelAllowed(t *testing.T) bool {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Log("kernel comparison skipped: bpf() not permitted")
		return false
	}
	return true
}

func dropinSpec(t *testing.T) *ebpf.CollectionSpec {
	t.Helper()
	spec, err := loader.LoadCollectionSpec(dropinObject)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestLoadAndAssign loads bpf2go-shaped structs and runs what they hold:
// the tail call through the assigned prog_array works, the map counts,
// and closing the objects is all the cleanup there is.
func TestLoadAndAssign(t *testing.T) {
	spec, err := bpfvm.LoadCollectionSpec(dropinObject)
	if err != nil {
		t.Fatal(err)
	}
	var objs dropinObjects[*bpfvm.Program, *bpfvm.Map]
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.XdpCount.Close()
	defer objs.XdpVerdict.Close()
	defer objs.Counts.Close()
	defer objs.Jumps.Close()
	for i := range 3 {
		ret, err := objs.XdpCount.Run(&bpfvm.RunOptions{Data: []byte{7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}})
		if err != nil || ret != 2 {
			t.Fatalf("run %d: %d, %v; want XDP_PASS (2) from the tail call", i, ret, err)
		}
	}
	var n uint64
	if err := objs.Counts.Lookup(uint32(7), &n); err != nil || n != 3 {
		t.Errorf("counts[7] = %d, %v; want 3", n, err)
	}

	// Maps alone load the programs the prog_array's contents name, as
	// cilium/ebpf does: the slot holds the program's id.
	var maps dropinMaps[*bpfvm.Map]
	if err := bpfvm.LoadAndAssign(dropinSpec(t), &maps, nil); err != nil {
		t.Fatal(err)
	}
	defer maps.Counts.Close()
	defer maps.Jumps.Close()
	var id uint32
	if err := maps.Jumps.Lookup(uint32(0), &id); err != nil || id == 0 {
		t.Errorf("prog_array slot 0: id %d, %v", id, err)
	}
	if err := maps.Counts.Put(uint32(1), uint64(1)); err != nil {
		t.Error(err)
	}
}

// TestCollectionAssign moves objects out of a loaded collection: Close then
// leaves them working, and the collection no longer holds them.
func TestCollectionAssign(t *testing.T) {
	coll, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	var objs dropinObjects[*bpfvm.Program, *bpfvm.Map]
	if err := coll.Assign(&objs); err != nil {
		t.Fatal(err)
	}
	if len(coll.Programs) != 0 || coll.Maps["counts"] != nil || coll.Maps["jumps"] != nil {
		t.Errorf("collection still holds %d programs, maps %v", len(coll.Programs), coll.Maps)
	}
	coll.Close()
	ret, err := objs.XdpCount.Run(&bpfvm.RunOptions{Data: make([]byte, 14)})
	if err != nil || ret != 2 {
		t.Errorf("run after the collection's Close: %d, %v", ret, err)
	}
	for _, c := range []interface{ Close() error }{objs.XdpCount, objs.XdpVerdict, objs.Counts, objs.Jumps} {
		c.Close()
	}
	if _, err := objs.XdpCount.Run(&bpfvm.RunOptions{Data: make([]byte, 14)}); !errors.Is(err, bpfvm.ErrClosed) {
		t.Errorf("run after Close: %v, want ErrClosed", err)
	}
}

// Bad structs, for P, M = bpfvm's or cilium/ebpf's Program and Map.
type (
	missingProgram[P, M any] struct {
		X P `ebpf:"no_such_program"`
	}
	missingMap[P, M any] struct {
		X M `ebpf:"no_such_map"`
	}
	mistyped[P, M any] struct {
		X uint32 `ebpf:"counts"`
	}
	mapAsProgram[P, M any] struct {
		X P `ebpf:"counts"`
	}
	twice[P, M any] struct {
		X M `ebpf:"counts"`
		Y M `ebpf:"counts"`
	}
	comma[P, M any] struct {
		X M `ebpf:"counts,omitempty"`
	}
	unexported[P, M any] struct {
		x M `ebpf:"counts"`
	}
	nilInner[P, M any] struct {
		Inner *dropinMaps[M]
	}
	// A prog_array with contents that a loaded program uses, not
	// assigned: cilium/ebpf refuses, as closing it would empty it.
	jumpsLeftOut[P, M any] struct {
		X P `ebpf:"xdp_count"`
	}
)

// TestLoadAndAssignBadInput: structs cilium/ebpf refuses are refused, with
// its messages, and nothing is assigned.
func TestLoadAndAssignBadInput(t *testing.T) {
	var prog *bpfvm.Program
	kernel := kernelAllowed(t)
	for _, tc := range []struct {
		name          string
		ours, theirs  any
		want          string
		nothingLoaded bool
	}{
		{"not a pointer", dropinMaps[*bpfvm.Map]{}, dropinMaps[*ebpf.Map]{}, "is not a pointer to struct", true},
		{"nil", (*dropinMaps[*bpfvm.Map])(nil), (*dropinMaps[*ebpf.Map])(nil), "nil *bpfvm_test.dropinMaps", true},
		{"nil interface", nil, nil, "nil interface", true},
		{"pointer to a non-struct", &prog, new(*ebpf.Program), "is not a struct", true},
		{"missing program", &missingProgram[*bpfvm.Program, *bpfvm.Map]{}, &missingProgram[*ebpf.Program, *ebpf.Map]{}, "field X: unknown program no_such_program", true},
		{"missing map", &missingMap[*bpfvm.Program, *bpfvm.Map]{}, &missingMap[*ebpf.Program, *ebpf.Map]{}, "field X: missing map no_such_map", true},
		{"mistyped", &mistyped[*bpfvm.Program, *bpfvm.Map]{}, &mistyped[*ebpf.Program, *ebpf.Map]{}, "field X: unsupported type uint32", true},
		{"map as program", &mapAsProgram[*bpfvm.Program, *bpfvm.Map]{}, &mapAsProgram[*ebpf.Program, *ebpf.Map]{}, "field X: unknown program counts", true},
		{"twice", &twice[*bpfvm.Program, *bpfvm.Map]{}, &twice[*ebpf.Program, *ebpf.Map]{}, `field Y: object "counts" was already assigned to X`, true},
		{"comma", &comma[*bpfvm.Program, *bpfvm.Map]{}, &comma[*ebpf.Program, *ebpf.Map]{}, "field X: ebpf tag contains a comma", true},
		{"unexported", &unexported[*bpfvm.Program, *bpfvm.Map]{}, &unexported[*ebpf.Program, *ebpf.Map]{}, "field x: can't set value", true},
		{"nil inner struct", &nilInner[*bpfvm.Program, *bpfvm.Map]{}, &nilInner[*ebpf.Program, *ebpf.Map]{}, "nil pointer to", true},
		{"prog_array left out", &jumpsLeftOut[*bpfvm.Program, *bpfvm.Map]{}, &jumpsLeftOut[*ebpf.Program, *ebpf.Map]{}, "ProgramArray jumps must be assigned to prevent missed tail calls", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := bpfvm.LoadAndAssign(dropinSpec(t), tc.ours, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error with %q", err, tc.want)
			}
			if strings.Contains(tc.name, "unexported") {
				return // cilium/ebpf loads the map first, which this test cannot close
			}
			// Type names differ by package: generic types print full paths.
			norm := strings.NewReplacer("*github.com/cilium/ebpf.", "*bpfvm.", "*ebpf.", "*bpfvm.", "*github.com/bpfvm/bpfvm.", "*bpfvm.").Replace
			var kcoll *ebpf.Collection
			if kernel {
				kcoll = kernelCollection(t, dropinObject)
			}
			if tc.nothingLoaded {
				coll, err := bpfvm.NewCollection(dropinSpec(t))
				if err != nil {
					t.Fatal(err)
				}
				defer coll.Close()
				aerr := coll.Assign(tc.ours)
				if aerr == nil {
					t.Errorf("Collection.Assign: nil error")
				} else if kcoll != nil {
					kerr := kcoll.Assign(tc.theirs)
					if got, want := norm(aerr.Error()), norm(fmt.Sprint(kerr)); got != want && tc.name != "nil inner struct" {
						t.Errorf("Collection.Assign message\n%s\nwant cilium/ebpf's\n%s", got, want)
					}
				}
			}
			if !kernel {
				return
			}
			kerr := dropinSpec(t).LoadAndAssign(tc.theirs, nil)
			if kerr == nil {
				t.Fatalf("cilium/ebpf: nil error")
			}
			// The same message but for the package's name in types, and
			// for a nil inner struct, where ours names the field's type
			// and cilium/ebpf's the outer one.
			if got, want := norm(err.Error()), norm(kerr.Error()); got != want && tc.name != "nil inner struct" {
				t.Errorf("message\n%s\nwant cilium/ebpf's\n%s", got, want)
			}
		})
	}
}

// TestCollectionSpecWrapper: bpfvm's CollectionSpec is cilium/ebpf's with
// bpfvm's LoadAndAssign, and NewCollection takes it as it takes
// cilium/ebpf's, so that code written against cilium/ebpf compiles with
// its import switched.
func TestCollectionSpecWrapper(t *testing.T) {
	spec, err := bpfvm.LoadCollectionSpec(dropinObject)
	if err != nil {
		t.Fatal(err)
	}
	cp := spec.Copy()
	if err := spec.Variables["verdict"].Set(uint32(1)); err != nil { // XDP_DROP
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec *bpfvm.CollectionSpec
		want uint32
	}{{spec, 1}, {cp, 2}} {
		coll, err := bpfvm.NewCollection(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		ret, err := coll.Programs["xdp_count"].Run(&bpfvm.RunOptions{Data: make([]byte, 14)})
		coll.Close()
		if err != nil || ret != tc.want {
			t.Errorf("run: %d, %v; want %d (the copy keeps the spec's verdict)", ret, err, tc.want)
		}
	}
	var specs struct {
		Counts *bpfvm.MapSpec     `ebpf:"counts"`
		Count  *bpfvm.ProgramSpec `ebpf:"xdp_count"`
	}
	if err := spec.Assign(&specs); err != nil || specs.Counts.MaxEntries != 256 || specs.Count == nil {
		t.Errorf("cilium/ebpf's CollectionSpec.Assign through the wrapper: %v", err)
	}
	if _, err := bpfvm.NewCollection((*bpfvm.CollectionSpec)(nil)); err == nil {
		t.Error("nil spec: nil error")
	}
	if _, err := bpfvm.NewCollection((*ebpf.CollectionSpec)(nil)); err == nil {
		t.Error("nil cilium/ebpf spec: nil error")
	}
}
