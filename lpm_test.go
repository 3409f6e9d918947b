package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/maps"
)

// lpmArgs is struct lpm_args of testdata/lpm_bloom.c.
type lpmArgs struct {
	Op, Which, PrefixLen, Flags uint32
	Addr                        [16]byte
	Value                       uint64
}

// lpmKey4 and lpmKey6 are the tries' keys as Go code passes them.
type lpmKey4 struct {
	PrefixLen uint32
	Addr      [4]byte
}

type lpmKey6 struct {
	PrefixLen uint32
	Addr      [16]byte
}

// bothRun runs name on bpfvm and, where there is an oracle, on the kernel,
// and fails when they differ.
func bothRun(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, name string, in []byte, what string) runOut {
	t.Helper()
	got := run(t, vm.Programs[name], in, nil)
	if k, ok := kernelRun(t, kern, name, in, nil); ok {
		if k.ret != got.ret || !bytes.Equal(k.data, got.data) {
			t.Fatalf("%s: bpfvm %d % x, kernel %d % x", what, int32(got.ret), got.data, int32(k.ret), k.data)
		}
	}
	return got
}

// TestLPMTrieProgram drives both tries from programs and from Go, in a
// random order over overlapping prefixes of every length, and compares
// every result, every lookup and the iteration order with the kernel's.
func TestLPMTrieProgram(t *testing.T) {
	engines(t, func(t *testing.T, noVerify bool, opts bpfvm.CollectionOptions) {
		vm, kern := loadHelpers(t, noVerify, "testdata/lpm_bloom.o", opts)
		if opts.Programs.Engine == bpfvm.EngineInterpreter && vm.Programs["lpm"].Engine() != bpfvm.EngineInterpreter {
			t.Fatalf("engine %v, want the interpreter", vm.Programs["lpm"].Engine())
		}
		r := rand.New(rand.NewPCG(7, 11))
		bases := [][16]byte{
			{10, 1, 2, 3, 0x20, 0x01, 0x0d, 0xb8},
			{10, 1, 130, 3, 0x20, 0x01, 0x0d, 0xb8, 0x80},
			{192, 168, 0, 1, 0xfe, 0x80},
			{10, 0, 0, 0, 0x20, 0x01, 0x0d, 0xb9},
		}
		seen := map[string]int{}
		for i := range 1500 {
			a := lpmArgs{Op: uint32(r.IntN(3)), Which: uint32(r.IntN(2)), Addr: bases[r.IntN(len(bases))], Value: r.Uint64()}
			maxLen := 32
			if a.Which == 1 {
				maxLen = 128
			}
			a.PrefixLen = uint32(r.IntN(maxLen + 2)) // one past the maximum too
			if r.IntN(3) == 0 {
				a.Addr[r.IntN(16)] ^= byte(1 << r.IntN(8))
			}
			if a.Op == 0 {
				a.PrefixLen = uint32(maxLen) // lookups as of an address
				if r.IntN(4) == 0 {
					a.PrefixLen = uint32(r.IntN(maxLen + 1))
				}
			}
			a.Flags = uint32(r.IntN(4))
			if a.Which == 0 {
				a.Value &= 0xffffffff
			}
			what := fmt.Sprintf("step %d %+v", i, a)
			if r.IntN(4) == 0 && a.Op != 0 {
				goSide(t, vm, kern, a, what)
				continue
			}
			got := bothRun(t, vm, kern, "lpm", frame(a), what)
			seen[fmt.Sprint(a.Op, int32(got.ret))]++
		}
		// The sequence reaches every outcome: found and missed lookups,
		// EEXIST, ENOENT, ENOSPC and EINVAL.
		for _, want := range []string{"0 0", "0 1", "1 0", "1 -17", "1 -2", "1 -28", "1 -22", "2 0", "2 -2", "2 -22"} {
			if seen[want] == 0 {
				t.Errorf("no run with op and result %q: %v", want, seen)
			}
		}
		if kern != nil {
			for _, name := range []string{"v4", "v6"} {
				if g, w := bpfvmKeys(t, vm.Maps[name]), kernelKeys(t, kern.Maps[name]); g != w {
					t.Errorf("%s iteration:\nbpfvm  %s\nkernel %s", name, g, w)
				}
			}
		}
	})
}

// engines runs f in both modes (checked, verified) on the JIT and on the
// interpreter.
func engines(t *testing.T, f func(t *testing.T, noVerify bool, opts bpfvm.CollectionOptions)) {
	for _, e := range []struct {
		name   string
		engine bpfvm.Engine
	}{{"jit", bpfvm.EngineDefault}, {"interpreter", bpfvm.EngineInterpreter}} {
		t.Run(e.name, func(t *testing.T) {
			modes(t, func(t *testing.T, noVerify bool) {
				var opts bpfvm.CollectionOptions
				opts.Programs.Engine = e.engine
				f(t, noVerify, opts)
			})
		})
	}
}

// goSide does a's update or delete from Go on both sides.
func goSide(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, a lpmArgs, what string) {
	t.Helper()
	var key any = lpmKey4{a.PrefixLen, [4]byte(a.Addr[:4])}
	var val any = uint32(a.Value)
	name := "v4"
	if a.Which == 1 {
		key, val, name = lpmKey6{a.PrefixLen, a.Addr}, a.Value, "v6"
	}
	var gerr, kerr error
	if a.Op == 1 {
		gerr = vm.Maps[name].Update(key, val, bpfvm.MapUpdateFlags(a.Flags))
	} else {
		gerr = vm.Maps[name].Delete(key)
	}
	if kern == nil {
		return
	}
	if a.Op == 1 {
		kerr = kern.Maps[name].Update(key, val, ebpf.MapUpdateFlags(a.Flags))
	} else {
		kerr = kern.Maps[name].Delete(key)
	}
	if errnoOf(gerr) != errnoOf(kerr) {
		t.Fatalf("%s from Go: bpfvm %v, kernel %v", what, gerr, kerr)
	}
}

// errnoOf names an error by the errno it stands for, on either side.
func errnoOf(err error) string {
	for _, e := range []struct {
		name string
		errs []error
	}{
		{"ENOENT", []error{maps.ErrKeyNotExist, ebpf.ErrKeyNotExist}},
		{"EEXIST", []error{maps.ErrKeyExist, ebpf.ErrKeyExist}},
		{"EINVAL", []error{maps.ErrInvalid, unix.EINVAL}},
		{"ENOSPC", []error{maps.ErrNoSpace, unix.ENOSPC}},
		{"E2BIG", []error{maps.ErrFull, unix.E2BIG}},
		{"EOPNOTSUPP", []error{maps.ErrNotSupported, unix.EOPNOTSUPP, unix.Errno(524), ebpf.ErrNotSupported}},
	} {
		for _, target := range e.errs {
			if errors.Is(err, target) {
				return e.name
			}
		}
	}
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func bpfvmKeys(t *testing.T, m *bpfvm.Map) string {
	t.Helper()
	var keys []string
	var k, v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, fmt.Sprintf("%x=%x", k, v))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(keys)
}

func kernelKeys(t *testing.T, m *ebpf.Map) string {
	t.Helper()
	var keys []string
	var k, v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, fmt.Sprintf("%x=%x", k, v))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(keys)
}

// TestBloomFilterProgram pushes from programs and Go and peeks from
// programs: pushed values are always found, bad flags give -EINVAL, as in
// the kernel; Go-side Lookup(nil, &v) tests a value as cilium/ebpf's.
func TestBloomFilterProgram(t *testing.T) {
	engines(t, func(t *testing.T, noVerify bool, opts bpfvm.CollectionOptions) {
		vm, kern := loadHelpers(t, noVerify, "testdata/lpm_bloom.o", opts)
		type args struct{ Op, Flags, Value uint32 }
		const push, peek = 0, 1
		if got := run(t, vm.Programs["bloom_op"], frame(args{peek, 0, 5}), nil); got.ret != errno(eNOENT) {
			t.Errorf("peek of an empty filter: %d", int32(got.ret))
		}
		for v := uint32(0); v < 64; v += 2 {
			if v%4 == 0 {
				bothRun(t, vm, kern, "bloom_op", frame(args{push, 0, v}), fmt.Sprintf("push %d", v))
				continue
			}
			if err := vm.Maps["bloom"].Put(nil, v); err != nil {
				t.Fatal(err)
			}
			if kern != nil {
				if err := kern.Maps["bloom"].Put(nil, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, flags := range []uint32{1, 2, 4} {
			bothRun(t, vm, kern, "bloom_op", frame(args{push, flags, 1}), fmt.Sprintf("push flags %d", flags))
		}
		for v := uint32(0); v < 64; v += 2 {
			if got := bothRun(t, vm, kern, "bloom_op", frame(args{peek, 0, v}), fmt.Sprintf("peek %d", v)); got.ret != 0 {
				t.Errorf("peek %d: %d", v, int32(got.ret))
			}
			w := v
			if err := vm.Maps["bloom"].Lookup(nil, &w); err != nil || w != v {
				t.Errorf("Lookup(nil, %d): %v, value now %d", v, err, w)
			}
		}
		// Absent values are mostly absent: 3 hashes over 512 bits, 32
		// values: a false positive rate of about 0.5%.
		misses := 0
		for v := uint32(1000); v < 1100; v++ {
			if run(t, vm.Programs["bloom_op"], frame(args{peek, 0, v}), nil).ret == errno(eNOENT) {
				misses++
			}
			if err := vm.Maps["bloom"].Lookup(nil, &v); err != nil && !errors.Is(err, maps.ErrKeyNotExist) {
				t.Fatal(err)
			}
		}
		if misses < 90 {
			t.Errorf("%d of 100 absent values found absent", misses)
		}
		if err := vm.Maps["bloom"].Delete(nil); errnoOf(err) != "EOPNOTSUPP" {
			t.Errorf("Delete: %v, want EOPNOTSUPP", err)
		}
		var k []byte
		if err := vm.Maps["bloom"].NextKey(nil, &k); errnoOf(err) != "EOPNOTSUPP" {
			t.Errorf("NextKey: %v, want EOPNOTSUPP", err)
		}
		if binary.Size(args{}) != 12 {
			t.Fatal("args layout")
		}
	})
}

// TestLPMConcurrentRuns runs program-side lookups on several runners
// while Go inserts and deletes overlapping prefixes: every lookup finds
// the /8 that stays, or one of the longer prefixes with its own value,
// never a reused node (run with -race). Both engines, verified and
// checked.
func TestLPMConcurrentRuns(t *testing.T) {
	engines(t, func(t *testing.T, noVerify bool, opts bpfvm.CollectionOptions) {
		opts.NumCPU = 2
		vm := loadVM(t, noVerify, "testdata/lpm_bloom.o", opts)
		trie := vm.Maps["v4"]
		if err := trie.Put(lpmKey4{8, [4]byte{10}}, uint32(8)); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				pkt := make([]byte, 64)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					copy(pkt[14+16:], []byte{10, 1, byte(i % 4), byte(g)})
					ret, err := vm.Programs["lpm_bench"].Run(&bpfvm.RunOptions{Data: pkt})
					if err != nil {
						t.Error(err)
						return
					}
					if ret != 8 && ret != 16 && ret != 24 {
						t.Errorf("lookup of 10.1.%d.%d returned %d", i%4, g, ret)
						return
					}
				}
			})
		}
		r := rand.New(rand.NewPCG(3, 4))
		for range 3000 {
			k := lpmKey4{16, [4]byte{10, 1}}
			if r.IntN(2) == 0 {
				k = lpmKey4{24, [4]byte{10, 1, byte(r.IntN(4))}}
			}
			if r.IntN(2) == 0 {
				_ = trie.Put(k, k.PrefixLen)
			} else {
				_ = trie.Delete(k)
			}
		}
		close(stop)
		wg.Wait()
	})
}

// TestLPMBatch compares the batch operations on an LPM trie with the
// kernel's: update, lookup and delete in batches work (the kernel's
// generic ones), lookup-and-delete in a batch is not supported.
func TestLPMBatch(t *testing.T) {
	vm, kern := loadHelpers(t, false, "testdata/lpm_bloom.o", bpfvm.CollectionOptions{})
	if kern == nil {
		t.Skip("no kernel oracle")
	}
	keys := []lpmKey4{{8, [4]byte{10}}, {16, [4]byte{10, 1}}, {24, [4]byte{10, 1, 2}}, {24, [4]byte{10, 1, 3}}, {0, [4]byte{}}, {32, [4]byte{10, 1, 2, 3}}}
	vals := []uint32{1, 2, 3, 4, 5, 6}
	gn, gerr := vm.Maps["v4"].BatchUpdate(keys, vals, nil)
	kn, kerr := kern.Maps["v4"].BatchUpdate(keys, vals, nil)
	if gn != kn || errnoOf(gerr) != errnoOf(kerr) {
		t.Fatalf("batch update: bpfvm %d %v, kernel %d %v", gn, gerr, kn, kerr)
	}
	gk, gv := make([]lpmKey4, 4), make([]uint32, 4)
	kk, kv := make([]lpmKey4, 4), make([]uint32, 4)
	var gc bpfvm.MapBatchCursor
	var kc ebpf.MapBatchCursor
	for round := range 3 {
		gn, gerr := vm.Maps["v4"].BatchLookup(&gc, gk, gv, nil)
		kn, kerr := kern.Maps["v4"].BatchLookup(&kc, kk, kv, nil)
		if gn != kn || errnoOf(gerr) != errnoOf(kerr) || fmt.Sprint(gk[:gn], gv[:gn]) != fmt.Sprint(kk[:kn], kv[:kn]) {
			t.Fatalf("batch lookup %d: bpfvm %d %v %v %v, kernel %d %v %v %v", round, gn, gerr, gk[:gn], gv[:gn], kn, kerr, kk[:kn], kv[:kn])
		}
		if gerr != nil {
			break
		}
	}
	var gc2 bpfvm.MapBatchCursor
	var kc2 ebpf.MapBatchCursor
	gn, gerr = vm.Maps["v4"].BatchLookupAndDelete(&gc2, gk, gv, nil)
	kn, kerr = kern.Maps["v4"].BatchLookupAndDelete(&kc2, kk, kv, nil)
	if gn != kn || errnoOf(gerr) != errnoOf(kerr) {
		t.Fatalf("batch lookup and delete: bpfvm %d %v, kernel %d %v", gn, gerr, kn, kerr)
	}
	gn, gerr = vm.Maps["v4"].BatchDelete(keys[:3], nil)
	kn, kerr = kern.Maps["v4"].BatchDelete(keys[:3], nil)
	if gn != kn || errnoOf(gerr) != errnoOf(kerr) {
		t.Fatalf("batch delete: bpfvm %d %v, kernel %d %v", gn, gerr, kn, kerr)
	}
	if g, w := bpfvmKeys(t, vm.Maps["v4"]), kernelKeys(t, kern.Maps["v4"]); g != w {
		t.Errorf("after: bpfvm %s, kernel %s", g, w)
	}
}
