package bpfvm_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
)

// TestMapBTFRetryKernel compares map creations whose BTF the kernel may
// refuse with cilium/ebpf on the kernel, which then retries without BTF:
// a socket storage, which needs BTF, must then fail as the kernel's does,
// and another map must lose the special fields of its value.
func TestMapBTFRetryKernel(t *testing.T) {
	i32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	u64 := &btf.Int{Name: "long long unsigned int", Size: 8}
	u8 := &btf.Int{Name: "unsigned char", Size: 1}
	bytes := func(n uint32) btf.Type {
		return &btf.Array{Type: u8, Index: &btf.Int{Name: "unsigned int", Size: 4}, Nelems: n}
	}
	timer := &btf.Struct{Name: "bpf_timer", Size: 16, Members: []btf.Member{{Name: "a", Type: u64}, {Name: "b", Type: u64, Offset: 64}}}
	withTimer := &btf.Struct{Name: "v", Size: 16, Members: []btf.Member{{Name: "t", Type: timer}}}
	lock := &btf.Struct{Name: "bpf_spin_lock", Size: 4, Members: []btf.Member{{Name: "val", Type: i32}}}
	withLock := &btf.Struct{Name: "v", Size: 8, Members: []btf.Member{{Name: "l", Type: lock}, {Name: "x", Type: i32, Offset: 32}}}
	sks := func(key, value btf.Type, vsize uint32) *ebpf.MapSpec {
		return &ebpf.MapSpec{Name: "sks", Type: ebpf.SkStorage, KeySize: 4, ValueSize: vsize, Flags: 1, Key: key, Value: value}
	}
	cases := []struct {
		name string
		spec *ebpf.MapSpec
		// unmodelled: bpfvm refuses with ErrNotSupported what the
		// kernel takes (a spin lock in a socket storage, whose copies
		// bpfvm does not make field by field).
		unmodelled bool
	}{
		{"sk_storage", sks(i32, bytes(8), 8), false},
		{"sk_storage without BTF", sks(nil, nil, 8), false},
		{"sk_storage key BTF of another size", sks(u64, bytes(8), 8), false},
		{"sk_storage value BTF of another size", sks(i32, bytes(4), 8), false},
		{"sk_storage struct key", sks(&btf.Struct{Name: "k", Size: 4, Members: []btf.Member{{Name: "x", Type: i32}}}, bytes(8), 8), false},
		{"sk_storage timer", sks(i32, withTimer, 16), false},
		{"sk_storage spin lock", sks(i32, withLock, 8), true},
		{"hash value BTF of another size", &ebpf.MapSpec{Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 1, Key: i32, Value: withLock}, false},
		{"hash spin lock", &ebpf.MapSpec{Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1, Key: i32, Value: withLock}, false},
	}
	kernel := haveKernel(t)
	compared, agreed := 0, 0
	for _, c := range cases {
		// A BPF_F_LOCK update tells whether the map kept a spin lock.
		lockErr := func(put func(k, v any, f ebpf.MapUpdateFlags) error) bool {
			return c.spec.Type == ebpf.Hash && put(uint32(0), make([]byte, c.spec.ValueSize), ebpf.UpdateLock) != nil
		}
		m, err := bpfvm.NewMap(c.spec.Copy())
		var locked bool
		if err == nil {
			locked = lockErr(func(k, v any, f ebpf.MapUpdateFlags) error { return m.Update(k, v, f) })
			m.Close()
		}
		if c.unmodelled {
			if err == nil {
				t.Errorf("%s: created", c.name)
			}
			continue
		}
		if !kernel {
			continue
		}
		km, kerr := ebpf.NewMap(c.spec.Copy())
		var klocked bool
		if kerr == nil {
			klocked = lockErr(func(k, v any, f ebpf.MapUpdateFlags) error { return km.Update(k, v, f) })
			km.Close()
		}
		compared++
		if (err == nil) != (kerr == nil) || locked != klocked {
			t.Errorf("%s: bpfvm %v (BPF_F_LOCK refused %v), kernel %v (%v)", c.name, err, locked, kerr, klocked)
			continue
		}
		agreed++
	}
	if compared > 0 {
		t.Logf("%d creations compared with cilium/ebpf's on the kernel, %d agree", compared, agreed)
	}
}
