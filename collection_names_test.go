package bpfvm

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/verifier"
)

// TestCollectionProgramNames loads programs one by one from an object where
// others fail, while a plain NewCollection still fails on them.
func TestCollectionProgramNames(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/loops.o")
	if err != nil {
		t.Fatal(err)
	}
	if coll, err := NewCollection(spec); !errors.Is(err, verifier.ErrRejected) {
		if coll != nil {
			coll.Close()
		}
		t.Fatalf("NewCollection: err %v, want a rejection (loops.o has failing programs)", err)
	}
	for _, tc := range []struct {
		names []string
		want  []string
		err   error
	}{
		{names: []string{"forever"}, want: []string{"forever"}},
		{names: []string{"for_sum", "loop_sum", "for_sum"}, want: []string{"for_sum", "loop_sum"}},
		{names: []string{}, want: nil},
		{names: []string{"bad_iter_leak"}, err: verifier.ErrRejected},
		{names: []string{"no_such_prog"}, err: errAny},
	} {
		coll, err := NewCollectionWithOptions(spec, CollectionOptions{ProgramNames: tc.names})
		if tc.err != nil {
			if err == nil || tc.err != errAny && !errors.Is(err, tc.err) {
				t.Errorf("%v: err %v, want %v", tc.names, err, tc.err)
			}
			if coll != nil {
				t.Errorf("%v: a collection with the error", tc.names)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.names, err)
			continue
		}
		if got := sortedKeys(coll.Programs); len(got) != len(tc.want) || len(got) > 0 && !equalStrings(got, tc.want) {
			t.Errorf("%v: programs %v, want %v", tc.names, got, tc.want)
		}
		if len(coll.Maps) != len(spec.Maps) {
			t.Errorf("%v: %d maps, want all %d", tc.names, len(coll.Maps), len(spec.Maps))
		}
		coll.Close()
	}
}

var errAny = errors.New("any error")

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCollectionProgramNamesProgArray leaves a prog_array slot naming a
// program left out empty, and still refuses a slot naming no program.
func TestCollectionProgramNamesProgArray(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/helpers_maps.o")
	if err != nil {
		t.Fatal(err)
	}
	names := sortedKeys(spec.Programs)
	if len(names) < 2 || spec.Maps["jmp"] == nil {
		t.Fatalf("helpers_maps.o: programs %v, maps %v", names, sortedKeys(spec.Maps))
	}
	spec.Maps["jmp"].Contents = []ebpf.MapKV{{Key: uint32(0), Value: names[1]}}
	coll, err := NewCollectionWithOptions(spec, CollectionOptions{ProgramNames: names[:1]})
	if err != nil {
		t.Fatalf("%s without %s: %v", names[0], names[1], err)
	}
	coll.Close()
	coll, err = NewCollectionWithOptions(spec, CollectionOptions{ProgramNames: names[:2]})
	if err != nil {
		t.Fatalf("%s with %s: %v", names[0], names[1], err)
	}
	coll.Close()
	spec.Maps["jmp"].Contents = []ebpf.MapKV{{Key: uint32(0), Value: "no_such_prog"}}
	if coll, err := NewCollectionWithOptions(spec, CollectionOptions{ProgramNames: names[:1]}); err == nil {
		coll.Close()
		t.Fatal("a slot naming no program was accepted")
	}
}
