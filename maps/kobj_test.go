package maps

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/fieldbtf"
)

// waitLive reclaims until at most n objects are alive.
func waitLive(t *testing.T, n int, what string) {
	t.Helper()
	for range 400 {
		Reclaim()
		if LiveObjects() <= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Errorf("%s: %d objects alive, want %d", what, LiveObjects(), n)
}

// A referenced kptr's object is released when its value is overwritten
// (arrays), its element deleted or the map freed (hashes, arrays), as the
// kernel's bpf_obj_free_fields; untrusted kptrs hold no reference.
func TestKptrDestructor(t *testing.T) {
	mask := &btf.Struct{Name: "bpf_cpumask"}
	value := fieldbtf.Value("v", 16, fieldbtf.Member{Off: 0, Type: fieldbtf.Tagged("kptr", mask)}, fieldbtf.Member{Off: 8, Type: fieldbtf.U64})
	base := LiveObjects()
	for _, typ := range []Type{Array, Hash, LRUHash} {
		spec := Spec{Name: "k", Type: typ, KeySize: 4, ValueSize: 16, MaxEntries: 4, Value: value}
		m, err := New(spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := make([]byte, 4)
		stash := func(k uint32) {
			binary.LittleEndian.PutUint32(key, k)
			if typ != Array {
				if err := m.UpdateBytes(key, make([]byte, 16), UpdateAny); err != nil {
					t.Fatal(err)
				}
			}
			p := m.Lookup(unsafe.Pointer(&key[0]), 0)
			if p == nil {
				t.Fatalf("%v: no element %d", typ, k)
			}
			*(*uint64)(p) = NewObject(ObjCpumask, 40, 0)
		}
		stash(0)
		stash(1)
		if LiveObjects() != base+2 {
			t.Fatalf("%v: %d objects, want %d", typ, LiveObjects(), base+2)
		}
		binary.LittleEndian.PutUint32(key, 0)
		if typ == Array {
			err = m.UpdateBytes(key, make([]byte, 16), UpdateAny)
		} else {
			err = m.Delete(unsafe.Pointer(&key[0]))
		}
		if err != nil {
			t.Fatal(err)
		}
		waitLive(t, base+1, typ.String()+" overwrite or delete")
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		waitLive(t, base, typ.String()+" close")
	}
}
