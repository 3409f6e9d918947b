package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// frame returns an Ethernet header followed by the given fields, in host
// byte order: what the helpers_loop.c programs read their arguments from.
func frame(fields ...any) []byte {
	var b bytes.Buffer
	b.Write(make([]byte, 14))
	for _, f := range fields {
		if err := binary.Write(&b, binary.NativeEndian, f); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func TestHelperLoop(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_loop.o", bpfvm.CollectionOptions{})
		type args struct{ Nr, Flags, Stop, Pad uint32 }
		type out struct{ Sum, Ret uint64 }
		for _, c := range []struct {
			name string
			in   args
			ret  uint32
			sum  uint64
		}{
			{"ten", args{Nr: 10, Stop: 100}, 10, 45},
			{"stop at 3", args{Nr: 10, Stop: 3}, 4, 6},
			{"stop at first", args{Nr: 10, Stop: 0}, 1, 0},
			{"zero loops", args{Nr: 0, Stop: 100}, 0, 0},
			{"thousand", args{Nr: 1000, Stop: 1000}, 1000, 499500},
			{"flags", args{Nr: 10, Flags: 1, Stop: 100}, errno(eINVAL), 0},
			{"too many", args{Nr: 1<<23 + 1, Stop: 0}, errno(e2BIG), 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				in := frame(c.in, out{})
				want := frame(c.in, out{c.sum, uint64(int64(int32(c.ret)))})
				checkRun(t, vm, kern, "loop", in, nil, runOut{c.ret, want})
			})
		}
	})
}

// fill sets every map to the same contents in bpfvm and the kernel.
func fill(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, name string, kv map[uint32]uint64) {
	t.Helper()
	clearMap := func(keys []uint32, del func(uint32) error) {
		for _, k := range keys {
			del(k)
		}
	}
	var keys []uint32
	for k := range uint32(32) {
		keys = append(keys, k)
	}
	clearMap(keys, func(k uint32) error { return vm.Maps[name].Delete(k) })
	for k, v := range kv {
		if err := vm.Maps[name].Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if kern != nil {
		clearMap(keys, func(k uint32) error { return kern.Maps[name].Delete(k) })
		for k, v := range kv {
			if err := kern.Maps[name].Put(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// contents returns a map's contents in bpfvm, and checks the kernel's are
// the same.
func contents(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, name string) map[uint32]uint64 {
	t.Helper()
	got := map[uint32]uint64{}
	var k uint32
	var v uint64
	it := vm.Maps[name].Iterate()
	for it.Next(&k, &v) {
		got[k] = v
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if kern != nil {
		kgot := map[uint32]uint64{}
		kit := kern.Maps[name].Iterate()
		for kit.Next(&k, &v) {
			kgot[k] = v
		}
		if len(kgot) != len(got) {
			t.Errorf("map %s: kernel has %v, bpfvm %v", name, kgot, got)
		}
		for k, v := range kgot {
			if got[k] != v {
				t.Errorf("map %s: kernel has %v, bpfvm %v", name, kgot, got)
				break
			}
		}
	}
	return got
}

func TestHelperForEachMapElem(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_loop.o", bpfvm.CollectionOptions{})
		type args struct{ Stop, Flags uint32 }
		type out struct{ Sum, Ret uint64 }
		array := map[uint32]uint64{}
		arrayPlus1 := map[uint32]uint64{}
		for i := range uint32(8) {
			array[i] = uint64(i) * 10
			arrayPlus1[i] = uint64(i)*10 + 1
		}
		hash := map[uint32]uint64{1: 100, 2: 200, 3: 300, 5: 500, 8: 800}
		hashPlus1 := map[uint32]uint64{1: 101, 2: 201, 3: 301, 5: 501, 8: 801}
		for _, c := range []struct {
			name    string
			prog    string
			initial map[uint32]uint64
			in      args
			ret     uint32
			sum     uint64
			after   map[uint32]uint64
		}{
			{"array all", "foreach_array", array, args{Stop: 100}, 8, 28280, arrayPlus1},
			{"array stop at 2", "foreach_array", array, args{Stop: 2}, 3, 3030,
				map[uint32]uint64{0: 1, 1: 11, 2: 21, 3: 30, 4: 40, 5: 50, 6: 60, 7: 70}},
			{"array delete fails", "foreach_array", array, args{Stop: 100, Flags: 1}, 8, 28280, arrayPlus1},
			{"array flags", "foreach_array", array, args{Stop: 100, Flags: 2}, errno(eINVAL), 0, array},
			{"hash all", "foreach_hash", hash, args{Stop: 100}, 5, 20900, hashPlus1},
			{"hash delete each", "foreach_hash", hash, args{Stop: 100, Flags: 1}, 5, 20900, map[uint32]uint64{}},
			{"hash empty", "foreach_hash", map[uint32]uint64{}, args{Stop: 100}, 0, 0, map[uint32]uint64{}},
			{"hash flags", "foreach_hash", hash, args{Stop: 100, Flags: 2}, errno(eINVAL), 0, hash},
		} {
			t.Run(c.name, func(t *testing.T) {
				m := "arr"
				if c.prog == "foreach_hash" {
					m = "hash"
				}
				fill(t, vm, kern, m, c.initial)
				in := frame(c.in, out{})
				want := frame(c.in, out{c.sum, uint64(int64(int32(c.ret)))})
				// Run on the kernel first: checkRun runs both, and the maps
				// must be in the same state for each.
				checkRun(t, vm, kern, c.prog, in, nil, runOut{c.ret, want})
				got := contents(t, vm, kern, m)
				if len(got) != len(c.after) {
					t.Errorf("%s after: %v, want %v", m, got, c.after)
				}
				for k, v := range c.after {
					if got[k] != v {
						t.Errorf("%s after: %v, want %v", m, got, c.after)
						break
					}
				}
			})
		}
	})
}
