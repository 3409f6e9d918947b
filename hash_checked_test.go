package bpfvm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// wildKey is the key wildWriteSpec looks up, as a hash map's 8-byte key.
const wildKey = uint64(32) | uint64(0x0302010a)<<32

// An unverified program that writes next to a value it found in a map of the
// hash family, on either engine, in checked mode: writes that leave the
// value block (before the first slot, far past it) fail with vm.ErrMemory,
// writes into another slot of the block only change values; neither reaches
// the chain links, keys or hashes, so the Go side's lookups, updates,
// iteration and deletes afterwards see an intact table. Before values lived
// apart, a write 24 bytes before the value overwrote the element's link and
// the next Go lookup walking the bucket crashed the host.
func TestHashCheckedWildWrite(t *testing.T) {
	const ncpu = 2
	type wcase struct {
		off  int16
		fail bool // the write leaves the program's memory
	}
	cases := []wcase{
		{-4096, true}, {-24, true}, {-16, true}, {-8, true}, // before the first slot
		{0, false}, {8, false}, {16, false}, {64, false}, // the value, then other slots
		{32760, true}, // past the value block
	}
	types := []ebpf.MapType{ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash}
	for _, engine := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, typ := range types {
			perCPU := typ == ebpf.PerCPUHash || typ == ebpf.LRUCPUHash
			value := func(v uint64) any {
				if perCPU {
					return []uint64{v, v}
				}
				return v
			}
			for _, c := range cases {
				t.Run(fmt.Sprintf("%v/%v/off%d", engine, typ, c.off), func(t *testing.T) {
					spec := &ebpf.MapSpec{Name: "m", Type: typ, KeySize: 8, ValueSize: 8, MaxEntries: 4}
					coll, err := bpfvm.NewCollectionWithOptions(wildWriteSpec(spec, c.off), bpfvm.CollectionOptions{
						NumCPU:   ncpu,
						Programs: bpfvm.ProgramOptions{NoVerify: true, Engine: engine},
					})
					if err != nil {
						t.Fatal(err)
					}
					defer coll.Close()
					m := coll.Maps["m"]
					// The first key takes the first slot; the second its
					// neighbour.
					for i, k := range []uint64{wildKey, 7} {
						if err := m.Put(k, value(uint64(100+i))); err != nil {
							t.Fatal(err)
						}
					}
					_, err = coll.Programs["wild"].Run(&bpfvm.RunOptions{Data: make([]byte, 64)})
					if c.fail != errors.Is(err, vm.ErrMemory) {
						t.Fatalf("run: %v, want vm.ErrMemory: %v", err, c.fail)
					}
					if !c.fail && err != nil {
						t.Fatalf("run: %v", err)
					}
					wrote := 0 // the program's value untouched
					switch {
					case c.off == 0:
						wrote = 1
					case perCPU && c.off == 8:
						wrote = -1 // another CPU's value, if the run was on CPU 0
					}
					checkHashIntact(t, m, perCPU, wrote)
				})
			}
		}
	}
}

// checkHashIntact exercises every Go-side operation of hash map m, which
// holds keys wildKey and 7, after a wild write: absent keys stay absent,
// present ones are found (wrote of wildKey's values are -1, or with -1 at
// most one), updates
// and deletes work and iteration sees exactly the keys.
func checkHashIntact(t *testing.T, m *bpfvm.Map, perCPU bool, wrote int) {
	t.Helper()
	get := func(k uint64) ([]uint64, error) {
		if perCPU {
			var v []uint64
			err := m.Lookup(k, &v)
			return v, err
		}
		var v uint64
		err := m.Lookup(k, &v)
		return []uint64{v}, err
	}
	put := func(k, v uint64) error {
		if perCPU {
			return m.Put(k, []uint64{v, v})
		}
		return m.Put(k, v)
	}
	for k := uint64(1000); k < 1040; k++ {
		if _, err := get(k); !errors.Is(err, maps.ErrKeyNotExist) {
			t.Fatalf("lookup of absent key %d: %v", k, err)
		}
	}
	vs, err := get(wildKey)
	if err != nil {
		t.Fatalf("lookup of the program's key: %v", err)
	}
	written := 0
	for _, v := range vs {
		switch v {
		case ^uint64(0):
			written++
		case 100:
		default:
			t.Errorf("the program's key: value %#x, want 100 or the program's write", v)
		}
	}
	if written > 1 || wrote >= 0 && written != wrote {
		t.Errorf("the program's key: values %#x, want the program's write %d times", vs, wrote)
	}
	if _, err := get(7); err != nil {
		t.Fatalf("lookup of key 7: %v", err)
	}
	for k := uint64(1); k <= 2; k++ {
		if err := put(k, k); err != nil {
			t.Fatalf("put %d: %v", k, err)
		}
	}
	seen := map[uint64]bool{}
	var k uint64
	var out any = new(uint64)
	if perCPU {
		out = new([]uint64)
	}
	it := m.Iterate()
	for it.Next(&k, out) {
		seen[k] = true
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if len(seen) != 4 || !seen[wildKey] || !seen[7] || !seen[1] || !seen[2] {
		t.Errorf("iteration saw %v, want keys %d, 7, 1, 2", seen, wildKey)
	}
	for k := range seen {
		if err := m.Delete(k); err != nil {
			t.Fatalf("delete %d: %v", k, err)
		}
	}
	for k := range seen {
		if _, err := get(k); !errors.Is(err, maps.ErrKeyNotExist) {
			t.Fatalf("lookup of deleted key %d: %v", k, err)
		}
	}
}

// A program that writes next to what a lookup in a hash of maps gives it
// (an inner map's handle) in checked mode gets vm.ErrMemory at any offset:
// programs are granted none of a map of maps' memory, nor the writable part
// of a header. The outer table stays intact.
func TestHashOfMapsCheckedWildWrite(t *testing.T) {
	inner := &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	for _, engine := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, off := range []int16{-24, -8, 0, 8, 24, 64} {
			t.Run(fmt.Sprintf("%v/off%d", engine, off), func(t *testing.T) {
				spec := wildWriteSpec(&ebpf.MapSpec{Name: "m", Type: ebpf.HashOfMaps, KeySize: 8, ValueSize: 4, MaxEntries: 4, InnerMap: inner}, off)
				in := *inner
				in.Name = "inner"
				spec.Maps["inner"] = &in
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoVerify: true, Engine: engine}})
				if err != nil {
					t.Fatal(err)
				}
				defer coll.Close()
				m := coll.Maps["m"]
				if err := m.Put(wildKey, coll.Maps["inner"]); err != nil {
					t.Fatal(err)
				}
				if _, err := coll.Programs["wild"].Run(&bpfvm.RunOptions{Data: make([]byte, 64)}); !errors.Is(err, vm.ErrMemory) {
					t.Fatalf("run: %v, want vm.ErrMemory", err)
				}
				var id uint32
				if err := m.Lookup(wildKey, &id); err != nil {
					t.Fatalf("lookup: %v", err)
				}
				for k := uint64(1000); k < 1040; k++ {
					if err := m.Lookup(k, &id); !errors.Is(err, maps.ErrKeyNotExist) {
						t.Fatalf("lookup of absent key %d: %v", k, err)
					}
				}
				if err := m.Delete(wildKey); err != nil {
					t.Fatalf("delete: %v", err)
				}
			})
		}
	}
}
