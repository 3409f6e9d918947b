package bpfvm_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

// bytesOps are the byte-returning and flagged lookups compared with
// cilium/ebpf's on the kernel.
type bytesOps interface {
	Put(key, value any) error
	LookupBytes(key any) ([]byte, error)
	NextKeyBytes(key any) ([]byte, error)
	LookupWithFlags(key, valueOut any, flags ebpf.MapLookupFlags) error
	LookupAndDeleteWithFlags(key, valueOut any, flags ebpf.MapLookupFlags) error
}

// TestMapBytesKernel: LookupBytes and NextKeyBytes return nil for a missing
// key and past the last, and the value or key bytes otherwise (per-CPU
// values padded to 8 bytes each); lookup flags are EINVAL, as for kernel
// maps without a bpf_spin_lock.
func TestMapBytesKernel(t *testing.T) {
	for _, spec := range []*ebpf.MapSpec{
		{Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		{Name: "pa", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 2},
	} {
		t.Run(spec.Type.String(), func(t *testing.T) {
			ncpu, err := ebpf.PossibleCPU()
			if err != nil {
				ncpu = 2
			}
			steps := func(m bytesOps) string {
				var out []string
				add := func(v any, err error) { out = append(out, fmt.Sprintf("%v %s", v, errClass(err))) }
				add(m.LookupBytes(uint32(1)))
				value := any(uint32(0x01020304))
				if spec.Type == ebpf.PerCPUArray {
					per := make([]uint32, ncpu)
					per[0] = 0x01020304
					value = per
				}
				out = append(out, errClass(m.Put(uint32(1), value)))
				add(m.LookupBytes(uint32(1)))
				add(m.NextKeyBytes(nil))
				add(m.NextKeyBytes(uint32(1)))
				var v any = new(uint32)
				if spec.Type == ebpf.PerCPUArray {
					v = new([]uint32)
				}
				out = append(out, errClass(m.LookupWithFlags(uint32(1), v, ebpf.LookupLock)))
				out = append(out, errClass(m.LookupWithFlags(uint32(1), v, 8)))
				out = append(out, errClass(m.LookupAndDeleteWithFlags(uint32(1), v, ebpf.LookupLock)))
				return fmt.Sprint(out)
			}
			ours := steps(newOurMap(t, spec.Copy(), ncpu))
			t.Log(ours)
			if km := kernelMap(t, spec); km != nil {
				if kern := steps(km); kern != ours {
					t.Errorf("ours   %s\nkernel %s", ours, kern)
				}
			}
		})
	}
}
