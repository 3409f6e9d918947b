package bpfvm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// infoOf is what Info reports, from either back end.
func infoOf(typ ebpf.MapType, key, value, max, flags uint32, name string, frozen bool, extra uint64, hasExtra bool) string {
	return fmt.Sprintf("%v key %d value %d max %d flags %#x name %q frozen %v extra %d %v", typ, key, value, max, flags, name, frozen, extra, hasExtra)
}

// TestMapInfoKernel compares Map.Info with the kernel's, through
// cilium/ebpf's Map.Info, for several types, a long name (kept to 15
// bytes) and a frozen map.
func TestMapInfoKernel(t *testing.T) {
	for _, tc := range []struct {
		spec   *ebpf.MapSpec
		freeze bool
	}{
		{&ebpf.MapSpec{Name: "hash", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Flags: 1}, false},
		{&ebpf.MapSpec{Name: "a_rather_long_map_name", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 2, Flags: 1 << 10}, true},
		{&ebpf.MapSpec{Name: "pcpu", Type: ebpf.PerCPUHash, KeySize: 8, ValueSize: 8, MaxEntries: 4}, false},
		{&ebpf.MapSpec{Name: "bloom", Type: ebpf.BloomFilter, ValueSize: 4, MaxEntries: 8, MapExtra: 3}, false},
		{&ebpf.MapSpec{Name: "rb", Type: ebpf.RingBuf, MaxEntries: 4096}, false},
	} {
		t.Run(tc.spec.Name, func(t *testing.T) {
			m := newOurMap(t, tc.spec.Copy(), 1)
			if tc.freeze {
				if err := m.Freeze(); err != nil {
					t.Fatal(err)
				}
			}
			info, err := m.Info()
			if err != nil {
				t.Fatal(err)
			}
			extra, hasExtra := info.MapExtra()
			ours := infoOf(info.Type, info.KeySize, info.ValueSize, info.MaxEntries, info.Flags, info.Name, info.Frozen(), extra, hasExtra)
			if id, ok := info.ID(); !ok || uint32(id) != m.ID() {
				t.Errorf("ID %d, %v; want %d", id, ok, m.ID())
			}
			km := kernelMap(t, tc.spec)
			if km == nil {
				t.Log(ours)
				return
			}
			if tc.freeze {
				if err := km.Freeze(); err != nil {
					t.Fatal(err)
				}
			}
			kinfo, err := km.Info()
			if err != nil {
				t.Fatal(err)
			}
			kextra, khasExtra := kinfo.MapExtra()
			kern := infoOf(kinfo.Type, kinfo.KeySize, kinfo.ValueSize, kinfo.MaxEntries, kinfo.Flags, kinfo.Name, kinfo.Frozen(), kextra, khasExtra)
			if ours != kern {
				t.Errorf("ours   %s\nkernel %s", ours, kern)
			}
		})
	}
	m := newOurMap(t, &ebpf.MapSpec{Name: "c", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1}, 1)
	m.Close()
	if _, err := m.Info(); !errors.Is(err, bpfvm.ErrClosed) {
		t.Errorf("info of a closed map: %v", err)
	}
}
