package maps

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
)

const benchEntries = 10000

// benchMaps are the maps the benchmarks compare, filled with benchEntries
// keys.
var benchMaps = []struct {
	name string
	spec Spec
}{
	{"array", Spec{Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: benchEntries}},
	{"hash/key4", Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: benchEntries}},
	{"hash/key16", Spec{Type: Hash, KeySize: 16, ValueSize: 8, MaxEntries: benchEntries}},
	{"lru_hash/key4", Spec{Type: LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: benchEntries}},
}

// benchKeys returns the keys 0..n-1 in the map's key size.
func benchKeys(size uint32) [][]byte {
	keys := make([][]byte, benchEntries)
	for i := range keys {
		k := make([]byte, size)
		binary.NativeEndian.PutUint32(k, uint32(i))
		if size >= 16 {
			binary.NativeEndian.PutUint32(k[12:], uint32(i)*2654435761)
		}
		keys[i] = k
	}
	return keys
}

func newBenchMap(b *testing.B, spec Spec) (Map, [][]byte) {
	d := NewDomain(8)
	b.Cleanup(d.Close) // reclamation looks at every live domain
	m := newTestMap(b, spec, Options{NumCPU: 8, Domain: d})
	keys := benchKeys(spec.KeySize)
	val := make([]byte, 8)
	for _, k := range keys {
		if err := m.UpdateBytes(k, val, UpdateAny); err != nil {
			b.Fatal(err)
		}
	}
	return m, keys
}

func BenchmarkLookup(b *testing.B) {
	for _, bm := range benchMaps {
		b.Run(bm.name, func(b *testing.B) {
			m, keys := newBenchMap(b, bm.spec)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if m.Lookup(unsafe.Pointer(&keys[i%benchEntries][0]), 0) == nil {
					b.Fatal("missing")
				}
			}
		})
	}
}

func BenchmarkLookupParallel(b *testing.B) {
	for _, bm := range benchMaps {
		b.Run(bm.name, func(b *testing.B) {
			m, keys := newBenchMap(b, bm.spec)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if m.Lookup(unsafe.Pointer(&keys[i%benchEntries][0]), 0) == nil {
						b.Fatal("missing")
					}
				}
			})
		})
	}
}

func BenchmarkUpdateBytes(b *testing.B) {
	for _, bm := range benchMaps {
		b.Run(bm.name, func(b *testing.B) {
			m, keys := newBenchMap(b, bm.spec)
			val := make([]byte, 8)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := m.UpdateBytes(keys[i%benchEntries], val, UpdateAny); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUpdateBytesParallel(b *testing.B) {
	for _, bm := range benchMaps {
		b.Run(bm.name, func(b *testing.B) {
			m, keys := newBenchMap(b, bm.spec)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				val := make([]byte, 8)
				for i := 0; pb.Next(); i++ {
					if err := m.UpdateBytes(keys[(i*7919)%benchEntries], val, UpdateAny); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func BenchmarkLookupBytes(b *testing.B) {
	for _, bm := range benchMaps {
		b.Run(bm.name, func(b *testing.B) {
			m, keys := newBenchMap(b, bm.spec)
			val := make([]byte, 8)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := m.LookupBytes(keys[i%benchEntries], val); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKernel measures the same Go-side operations on kernel maps
// through cilium/ebpf (one bpf() system call each), for comparison.
func BenchmarkKernel(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("needs root")
	}
	for _, bm := range benchMaps {
		km, err := ebpf.NewMap(kernelSpec(bm.spec))
		if err != nil {
			b.Skipf("kernel map: %v", err)
		}
		defer km.Close()
		keys := benchKeys(bm.spec.KeySize)
		val := make([]byte, 8)
		for _, k := range keys {
			if err := km.Update(k, val, ebpf.UpdateAny); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("LookupBytes/"+bm.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				// The kernel's LRU may have evicted some keys early.
				if err := km.Lookup(keys[i%benchEntries], val); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
					b.Fatal(err)
				}
			}
		})
		b.Run("UpdateBytes/"+bm.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if err := km.Update(keys[i%benchEntries], val, ebpf.UpdateAny); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
