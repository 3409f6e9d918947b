package bpfvm_test

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// TestMapReplacements shares maps between collections: the replaced map
// is the given one (what one collection's program counts, the other's
// map sees), its contents are kept, it outlives the caller's Close, and a
// replaced prog_array gets the spec's programs.
func TestMapReplacements(t *testing.T) {
	first, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	jumps := newOurMap(t, &ebpf.MapSpec{Name: "jumps", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1}, 1)
	data := dropinSpec(t).Maps[".data"].Copy()
	data.Flags |= 1 << 10 // BPF_F_MMAPABLE, as cilium/ebpf and bpfvm create data sections
	data.Contents = nil
	dataMap := newOurMap(t, data, 1)
	if err := dataMap.Put(uint32(0), uint64(1000)); err != nil { // bytes_seen
		t.Fatal(err)
	}
	second, err := bpfvm.NewCollectionWithOptions(dropinSpec(t), bpfvm.CollectionOptions{
		MapReplacements: map[string]*bpfvm.Map{"counts": first.Maps["counts"], "jumps": jumps, ".data": dataMap},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	jumps.Close() // the collection holds a clone
	ret, err := second.Programs["xdp_count"].Run(&bpfvm.RunOptions{Data: []byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}})
	if err != nil || ret != 2 {
		t.Fatalf("run: %d, %v; want XDP_PASS (2) through the replaced prog_array", ret, err)
	}
	var n uint64
	if err := first.Maps["counts"].Lookup(uint32(9), &n); err != nil || n != 1 {
		t.Errorf("the first collection's counts[9] = %d, %v; want 1", n, err)
	}
	if err := dataMap.Lookup(uint32(0), &n); err != nil || n != 1014 {
		t.Errorf("bytes_seen = %d, %v; want 1000 + 14, the replacement's contents kept", n, err)
	}
	first.Close()
	if _, err := second.Programs["xdp_count"].Run(&bpfvm.RunOptions{Data: make([]byte, 14)}); err != nil {
		t.Errorf("run after the first collection's Close: %v", err)
	}
	if err := second.Maps["counts"].Lookup(uint32(9), &n); err != nil || n != 1 {
		t.Errorf("counts[9] after the first collection's Close = %d, %v; want 1", n, err)
	}
}

// TestMapReplacementsIncompatible: a replacement differing from its spec
// fails to load with cilium/ebpf's error (ErrMapIncompatible, listing the
// differences), compared with cilium/ebpf loading the object into the
// kernel with a kernel map made the same way.
func TestMapReplacementsIncompatible(t *testing.T) {
	counts := dropinSpec(t).Maps["counts"]
	kernel := kernelAllowed(t)
	for _, tc := range []struct {
		name   string
		name2  string // the map replaced
		change func(*ebpf.MapSpec)
		want   string
	}{
		{"type", "counts", func(s *ebpf.MapSpec) { s.Type = ebpf.LRUHash },
			"using replacement map counts: Type: LRUHash changed to Hash: map spec is incompatible with existing map"},
		{"key size", "counts", func(s *ebpf.MapSpec) { s.KeySize = 8 },
			"using replacement map counts: KeySize: 8 changed to 4: map spec is incompatible with existing map"},
		{"value size and max entries", "counts", func(s *ebpf.MapSpec) { s.ValueSize, s.MaxEntries = 4, 10 },
			"using replacement map counts: ValueSize: 4 changed to 8, MaxEntries: 10 changed to 256: map spec is incompatible with existing map"},
		{"flags", "counts", func(s *ebpf.MapSpec) { s.Flags = 1 }, // BPF_F_NO_PREALLOC
			"using replacement map counts: Flags: 1 changed to 0: map spec is incompatible with existing map"},
		{"data section without BPF_F_MMAPABLE", ".data", func(s *ebpf.MapSpec) {
			// Named otherwise: a collection's .data gets BPF_F_MMAPABLE.
			*s = *dropinSpec(t).Maps[".data"].Copy()
			s.Name, s.Contents = "data_copy", nil
		}, "using replacement map .data: Flags: 0 changed to 1024: map spec is incompatible with existing map"},
		{"not in the spec", "nope", func(s *ebpf.MapSpec) {},
			"replacement map nope not found in CollectionSpec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := counts.Copy()
			tc.change(spec)
			ours := newOurMap(t, spec.Copy(), 1)
			coll, err := bpfvm.NewCollectionWithOptions(dropinSpec(t), bpfvm.CollectionOptions{MapReplacements: map[string]*bpfvm.Map{tc.name2: ours}})
			if err == nil {
				coll.Close()
				t.Fatal("loaded")
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%v\nwant\n%s", err, tc.want)
			}
			if tc.name2 != "nope" && (!errors.Is(err, bpfvm.ErrMapIncompatible) || !errors.Is(err, ebpf.ErrMapIncompatible)) {
				t.Errorf("%v does not match ErrMapIncompatible and ebpf.ErrMapIncompatible", err)
			}
			if !kernel {
				return
			}
			km := kernelMap(t, spec)
			if km == nil {
				t.Skip("no kernel map")
			}
			kcoll, kerr := ebpf.NewCollectionWithOptions(dropinSpec(t), ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{tc.name2: km}})
			if kerr == nil {
				kcoll.Close()
				t.Fatal("the kernel's collection loaded")
			}
			if kerr.Error() != err.Error() {
				t.Errorf("error\n%v\ncilium/ebpf's\n%v", err, kerr)
			}
		})
	}
}

// TestMapReplacementsBadInput: a per-CPU map made for another number of
// CPUs (its values are one per runner), a closed map and a nil one are
// refused.
func TestMapReplacementsBadInput(t *testing.T) {
	perCPU := &ebpf.MapSpec{Name: "counts", Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 256}
	spec := dropinSpec(t)
	spec.Maps["counts"] = perCPU.Copy()
	closed := newOurMap(t, dropinSpec(t).Maps["counts"], 1)
	closed.Close()
	for _, tc := range []struct {
		name string
		m    *bpfvm.Map
		spec *ebpf.CollectionSpec
		want error
	}{
		{"per-CPU for other CPUs", newOurMap(t, perCPU.Copy(), 3), spec, bpfvm.ErrMapIncompatible},
		{"closed", closed, dropinSpec(t), bpfvm.ErrClosed},
		{"nil", nil, dropinSpec(t), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coll, err := bpfvm.NewCollectionWithOptions(tc.spec, bpfvm.CollectionOptions{NumCPU: 2,
				MapReplacements: map[string]*bpfvm.Map{"counts": tc.m}})
			if err == nil {
				coll.Close()
				t.Fatal("loaded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%v, want %v", err, tc.want)
			}
		})
	}
	// The same number of CPUs is fine.
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: 3,
		MapReplacements: map[string]*bpfvm.Map{"counts": newOurMap(t, perCPU.Copy(), 3)}})
	if err != nil {
		t.Fatal(err)
	}
	coll.Close()
}

// TestMapClone: a clone shares the contents and closes on its own; the
// last reference to a prog_array to close empties it, as the kernel does
// when the last descriptor of the map's file closes.
func TestMapClone(t *testing.T) {
	coll, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	jumps := coll.DetachMap("jumps")
	clone, err := jumps.Clone()
	if err != nil {
		t.Fatal(err)
	}
	jumps.Close()
	if _, err := jumps.Clone(); !errors.Is(err, bpfvm.ErrClosed) {
		t.Errorf("clone of a closed map: %v", err)
	}
	prog := coll.Programs["xdp_count"]
	if ret, err := prog.Run(&bpfvm.RunOptions{Data: make([]byte, 14)}); err != nil || ret != 2 {
		t.Errorf("with a clone open: %d, %v; want the tail call's XDP_PASS", ret, err)
	}
	clone.Close()
	if ret, err := prog.Run(&bpfvm.RunOptions{Data: make([]byte, 14)}); err != nil || ret != 0 {
		t.Errorf("with every reference closed: %d, %v; want XDP_ABORTED, the slot emptied", ret, err)
	}
	if m, err := (*bpfvm.Map)(nil).Clone(); m != nil || err != nil {
		t.Errorf("nil clone: %v, %v", m, err)
	}
}
