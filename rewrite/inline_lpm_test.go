package rewrite

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// The inline lookup of an LPM trie returns exactly the pointer the Go
// lookup returns, on both engines, for keys of every prefix length (and
// over the maximum) in tries of random prefixes, after deletes (which
// leave intermediate nodes) and replacing updates.
func TestInlineLPMLookupMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, data := range []uint32{1, 2, 4} {
		for _, n := range []int{0, 1, 5, 300} {
			t.Run(fmt.Sprintf("data%d/prefixes%d", data, n), func(t *testing.T) {
				checkInlineLPM(t, data, n, rng)
			})
		}
	}
}

func checkInlineLPM(t *testing.T, data uint32, n int, rng *rand.Rand) {
	spec := maps.Spec{Name: "lpm", Type: maps.LPMTrie, KeySize: 4 + data, ValueSize: 4, MaxEntries: 1024, Flags: maps.FlagNoPrealloc}
	m, err := maps.New(spec, maps.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	engines := lookupEngines(t, spec)
	env := newEnv(t)
	keyMem, err := vm.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer keyMem.Free()
	// At the end of the mapping, odd: the lookup reads the key only.
	keyAddr := keyMem.Addr() + 4096 - uint64(spec.KeySize)
	key := unsafe.Slice((*byte)(vm.Ptr(keyAddr)), spec.KeySize)
	maxLen := 8 * data
	mk := func(plen uint32) []byte {
		k := make([]byte, spec.KeySize)
		binary.NativeEndian.PutUint32(k, plen)
		for i := range data {
			// Few distinct values, so that prefixes nest and diverge.
			k[4+i] = byte(rng.IntN(4)) << 6
			if i == 0 {
				k[4] |= byte(rng.IntN(256)) & 0x3f
			}
		}
		return k
	}
	var keys [][]byte
	for range n {
		keys = append(keys, mk(uint32(rng.IntN(int(maxLen)+1))))
	}
	for i, k := range keys {
		if err := m.UpdateBytes(k, binary.NativeEndian.AppendUint32(nil, uint32(i+1)), maps.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string) {
		t.Helper()
		probes := append([][]byte(nil), keys...)
		for range 200 {
			probes = append(probes, mk(uint32(rng.IntN(int(maxLen)+1))))
		}
		probes = append(probes, mk(maxLen+1), mk(1<<31))
		for _, k := range probes {
			copy(key, k)
			want := uint64(uintptr(m.Lookup(unsafe.Pointer(&k[0]), 0)))
			for name, e := range engines {
				got, err := e.Run(env, m.Handle(), keyAddr, 0)
				if err != nil {
					t.Fatalf("%s: %s: %v", stage, name, err)
				}
				if got != want {
					t.Errorf("%s: %s: key %x: inline lookup %#x, Go lookup %#x", stage, name, k, got, want)
				}
			}
		}
	}
	check("filled")
	for i, k := range keys {
		switch i % 3 {
		case 0:
			m.Delete(unsafe.Pointer(&k[0]))
		case 1:
			m.UpdateBytes(k, []byte{9, 9, 9, 9}, maps.UpdateAny)
		}
	}
	check("updated")
}

// Inline LPM lookups racing updates and deletes of the trie (which link
// copies, turn elements into intermediate nodes and retire nodes) find
// either nothing or the value of a prefix of the probe: each /32 probe's
// longest match is its own /32, its /24 or its /16, whose values say
// which (checked against the probe's address).
func TestInlineLPMLookupConcurrent(t *testing.T) {
	const runners = 4
	iters := 5000
	if testing.Short() {
		iters = 1000
	}
	d := maps.NewDomain(runners)
	spec := maps.Spec{Name: "c", Type: maps.LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 256, Flags: maps.FlagNoPrealloc}
	m, err := maps.New(spec, maps.Options{NumCPU: runners, Domain: d})
	if err != nil {
		t.Fatal(err)
	}
	engines := lookupEngines(t, spec)
	jit, ok := engines["jit"]
	if !ok {
		t.Skip("no JIT")
	}
	key := func(plen uint32, a, b, c byte) []byte {
		k := binary.NativeEndian.AppendUint32(nil, plen)
		return append(k, 10, a, b, c)
	}
	// A value is the prefix's length and its address bytes.
	val := func(plen uint32, a, b, c byte) []byte { return []byte{byte(plen), a, b, c, 0, 0, 0, 0} }
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := 0; !stop.Load(); v++ {
			a, b, c := byte(v%4), byte(v/4%4), byte(v/16%4)
			for _, plen := range []uint32{16, 24, 32} {
				k := key(plen, a, b, c)
				if v%3 == 0 {
					m.Delete(unsafe.Pointer(&k[0]))
				} else {
					m.UpdateBytes(k, val(plen, a, b, c), maps.UpdateAny)
				}
			}
		}
	}()
	var bad, found atomic.Int64
	var rwg sync.WaitGroup
	for r := range runners {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			env := newEnv(t)
			env.CPU = r
			keyMem, _ := vm.Alloc(16)
			defer keyMem.Free()
			for n := range iters {
				a, b, c := byte(n%4), byte(n/4%4), byte(n/16%4)
				copy(unsafe.Slice((*byte)(vm.Ptr(keyMem.Addr())), 8), key(32, a, b, c))
				d.Enter(r)
				v, err := jit.Run(env, m.Handle(), keyMem.Addr(), 0)
				if err == nil && v != 0 {
					found.Add(1)
					got := unsafe.Slice((*byte)(vm.Ptr(v)), 4)
					var good bool
					switch got[0] {
					case 32:
						good = got[1] == a && got[2] == b && got[3] == c
					case 24:
						good = got[1] == a && got[2] == b
					case 16:
						good = got[1] == a
					}
					if !good {
						bad.Add(1)
					}
				}
				d.Exit(r)
			}
		}()
	}
	rwg.Wait()
	stop.Store(true)
	wg.Wait()
	m.Close()
	if bad.Load() != 0 || found.Load() == 0 {
		t.Errorf("%d lookups found another prefix's value, %d found", bad.Load(), found.Load())
	}
}
