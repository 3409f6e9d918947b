package bpfvm_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// Go-side lookups and updates of fixed-size keys and values allocate
// nothing: keys and values are read in place and lookups write straight
// into the caller's value (cilium/ebpf makes two allocations per Lookup).
// Passing a variable by value (or a slice) boxes it into an interface,
// which the caller allocates, as with cilium/ebpf; pointers and constants
// do not.
func TestMapAllocs(t *testing.T) {
	type pair struct{ A, B uint32 }
	for _, typ := range []ebpf.MapType{ebpf.Array, ebpf.Hash, ebpf.LRUHash} {
		spec := &ebpf.MapSpec{Name: "m", Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 16}
		coll, err := bpfvm.NewCollection(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": spec}})
		if err != nil {
			t.Fatal(err)
		}
		defer coll.Close()
		m := coll.Maps["m"]
		k, v, p := uint32(3), uint64(7), pair{1, 2}
		for _, c := range []struct {
			name string
			op   func() error
		}{
			{"update *uint32 *uint64", func() error { return m.Update(&k, &v, bpfvm.UpdateAny) }},
			{"update *uint32 *struct", func() error { return m.Update(&k, &p, bpfvm.UpdateAny) }},
			{"update uint32 const", func() error { return m.Put(uint32(3), &v) }},
			{"lookup *uint32 *uint64", func() error { return m.Lookup(&k, &v) }},
			{"lookup *uint32 *struct", func() error { return m.Lookup(&k, &p) }},
			{"lookup uint32 const", func() error { return m.Lookup(uint32(3), &v) }},
		} {
			if err := c.op(); err != nil {
				t.Fatalf("%v: %s: %v", typ, c.name, err)
			}
			if n := testing.AllocsPerRun(100, func() {
				if err := c.op(); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%v: %s: %.1f allocations, want 0", typ, c.name, n)
			}
		}
	}
}
