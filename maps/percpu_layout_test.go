package maps

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// Per-CPU values are laid out as the kernel's per-CPU areas: no 128-byte
// block (two cache lines) holds values of two CPUs, so runs on different
// CPUs write no line in common; Go still reads and writes a key's values
// one CPU after the other, and each CPU's value is where a run on that CPU
// finds it.
func TestPerCPULayout(t *testing.T) {
	const ncpu, entries = 3, 20
	for _, typ := range []Type{PerCPUArray, PerCPUHash, LRUPerCPUHash} {
		for _, vs := range []uint32{4, 8, 24, 64} {
			m := newTestMap(t, Spec{Type: typ, KeySize: 4, ValueSize: vs, MaxEntries: entries}, Options{NumCPU: ncpu})
			vsize := (vs + 7) &^ 7
			owner := map[uintptr]int{} // 128-byte block -> CPU
			for k := uint32(0); k < entries; k++ {
				val := make([]byte, vsize*ncpu)
				for cpu := range uint32(ncpu) {
					binary.LittleEndian.PutUint32(val[cpu*vsize:], k*100+cpu)
				}
				key := binary.LittleEndian.AppendUint32(nil, k)
				if err := m.UpdateBytes(key, val, UpdateAny); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(val))
				if err := m.LookupBytes(key, got); err != nil || string(got) != string(val) {
					t.Fatalf("%v value %d: read %x, %v; want %x", typ, vs, got, err, val)
				}
				for cpu := range ncpu {
					p := m.Lookup(unsafe.Pointer(&key[0]), cpu)
					if p == nil || *(*uint32)(p) != k*100+uint32(cpu) {
						t.Fatalf("%v value %d: key %d, CPU %d: %v", typ, vs, k, cpu, p)
					}
					for b := uintptr(p) / 128; b <= (uintptr(p)+uintptr(vs)-1)/128; b++ {
						if o, ok := owner[b]; ok && o != cpu {
							t.Fatalf("%v value %d: CPUs %d and %d share a block", typ, vs, o, cpu)
						}
						owner[b] = cpu
					}
				}
			}
		}
	}
}
