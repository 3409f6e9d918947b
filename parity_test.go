package bpfvm_test

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// TestVariablePointer: a pointer from VariablePointer reads what the
// program writes and the program reads what Go stores through it; bad
// types fail with cilium/ebpf's errors, and the pointer outlives the
// collection (the values stay mapped).
func TestVariablePointer(t *testing.T) {
	coll, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := bpfvm.VariablePointer[uint64](coll.Variables["runs"])
	if err != nil {
		t.Fatal(err)
	}
	*runs = 41
	if _, err := coll.Programs["xdp_count"].Run(&bpfvm.RunOptions{Data: make([]byte, 14)}); err != nil {
		t.Fatal(err)
	}
	if *runs != 42 {
		t.Errorf("runs = %d after a run, want 42", *runs)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"smaller type", func() error { _, err := bpfvm.VariablePointer[uint32](coll.Variables["runs"]); return err }(), ebpf.ErrInvalidType},
		{"Go pointer", func() error { _, err := bpfvm.VariablePointer[*int](coll.Variables["runs"]); return err }(), ebpf.ErrInvalidType},
		{"struct with a string", func() error {
			_, err := bpfvm.VariablePointer[struct {
				s [0]string
				n uint64
			}](coll.Variables["runs"])
			return err
		}(), ebpf.ErrInvalidType},
		{".rodata", func() error { _, err := bpfvm.VariablePointer[uint32](coll.Variables["verdict"]); return err }(), ebpf.ErrReadOnly},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	// A writable mapping lives on: .bss cannot be frozen.
	if err := coll.Maps[".bss"].Freeze(); !errors.Is(err, bpfvm.ErrBusy) {
		t.Errorf("Freeze of .bss with a pointer out: %v", err)
	}
	coll.Close()
	*runs = 7 // still mapped
	if *runs != 7 {
		t.Error("store after Close lost")
	}
}

// TestNewMapFromIDPerCPU: a per-CPU map reached by id has its
// collection's number of CPUs per value.
func TestNewMapFromIDPerCPU(t *testing.T) {
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"pc": {Name: "pc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 2},
	}}
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	if err := coll.Maps["pc"].Put(uint32(1), []uint64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	m, err := bpfvm.NewMapFromID(bpfvm.MapID(coll.Maps["pc"].ID()))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var got []uint64
	if err := m.Lookup(uint32(1), &got); err != nil || len(got) != 3 || got[2] != 3 {
		t.Errorf("lookup by id: %v, %v; want [1 2 3]", got, err)
	}
	if err := m.Put(uint32(0), []uint64{4, 5}); err == nil {
		t.Error("put of 2 values into a 3-CPU map by id: no error")
	}
}

// TestNewProgramFromID: a program found by its id (here a prog_array's
// value) runs as the original, is closed on its own, and is no longer
// found once every Go reference is closed.
func TestNewProgramFromID(t *testing.T) {
	coll, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	orig := coll.DetachProgram("xdp_count")
	jumps, err := bpfvm.NewMap(&ebpf.MapSpec{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer jumps.Close()
	if err := jumps.Put(uint32(0), orig); err != nil {
		t.Fatal(err)
	}
	var id uint32
	if err := jumps.Lookup(uint32(0), &id); err != nil {
		t.Fatal(err)
	}
	p, err := bpfvm.NewProgramFromID(bpfvm.ProgramID(id))
	if err != nil {
		t.Fatal(err)
	}
	if p.ID() != orig.ID() || p.Name() != orig.Name() {
		t.Errorf("by id: program %d %s, want %d %s", p.ID(), p.Name(), orig.ID(), orig.Name())
	}
	orig.Close()
	if _, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 14)}); err != nil {
		t.Errorf("run by id after the original's Close: %v", err)
	}
	p.Close()
	for _, tc := range []struct {
		name string
		id   uint32
	}{
		{"closed in Go, held by a prog_array", id},
		{"never used", 1 << 31},
	} {
		if _, err := bpfvm.NewProgramFromID(bpfvm.ProgramID(tc.id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want ENOENT", tc.name, err)
		}
	}
}
