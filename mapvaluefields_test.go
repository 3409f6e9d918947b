package bpfvm_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/internal/fieldbtf"
)

var (
	vfU64    = fieldbtf.U64
	vfOpaque = fieldbtf.Special
)

// vfValue is a value struct of size bytes with a u64 at 0, the special
// member at off and a u64 in the last 8 bytes.
func vfValue(size, off uint32, special btf.Type) *btf.Struct {
	return &btf.Struct{Name: "val", Size: size, Members: []btf.Member{
		{Name: "a", Type: vfU64},
		{Name: "s", Type: special, Offset: btf.Bits(off * 8)},
		{Name: "z", Type: vfU64, Offset: btf.Bits((size - 8) * 8)},
	}}
}

// TestMapValueFieldsGoSide compares Go-side operations on maps whose
// values have special fields with the kernel's: updates never write the
// fields and lookups read them as zero (copy_map_value and
// check_and_init_map_value), BPF_F_LOCK needs a spin lock, and such maps
// cannot be frozen or mapped.
func TestMapValueFieldsGoSide(t *testing.T) {
	task := &btf.Struct{Name: "task_struct"}
	kptr := &btf.Pointer{Target: &btf.TypeTag{Value: "kptr_untrusted", Type: task}}
	cases := []struct {
		name  string
		typ   ebpf.MapType
		flags uint32
		value *btf.Struct
	}{
		{"hash lock", ebpf.Hash, 0, vfValue(24, 8, vfOpaque("bpf_spin_lock", 4))},
		{"array lock", ebpf.Array, 0, vfValue(24, 8, vfOpaque("bpf_spin_lock", 4))},
		{"mmapable array lock", ebpf.Array, 1 << 10, vfValue(24, 8, vfOpaque("bpf_spin_lock", 4))},
		{"array timer", ebpf.Array, 0, vfValue(32, 8, vfOpaque("bpf_timer", 16))},
		{"lru timer", ebpf.LRUHash, 0, vfValue(32, 8, vfOpaque("bpf_timer", 16))},
		{"hash wq", ebpf.Hash, 0, vfValue(32, 8, vfOpaque("bpf_wq", 16))},
		{"array kptr", ebpf.Array, 0, vfValue(24, 8, kptr)},
		{"hash refcount", ebpf.Hash, 0, vfValue(24, 8, vfOpaque("bpf_refcount", 4))},
		{"plain", ebpf.Hash, 0, vfValue(24, 8, vfU64)},
	}
	kernel := os.Getuid() == 0 && rlimit.RemoveMemlock() == nil
	compared, agreed := 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": {
				Name: "m", Type: c.typ, KeySize: 4, ValueSize: c.value.Size, MaxEntries: 2, Flags: c.flags,
				Key: &btf.Int{Name: "key", Size: 4}, Value: c.value,
			}}}
			ours, err := bpfvm.NewCollection(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			results := func(m interface {
				Update(key, value any, flags ebpf.MapUpdateFlags) error
				Lookup(key, valueOut any) error
				Freeze() error
			}, memory func() error) []string {
				ones := bytes.Repeat([]byte{0xff}, int(c.value.Size))
				twos := bytes.Repeat([]byte{0x22}, int(c.value.Size))
				var out []string
				note := func(err error) {
					if err != nil {
						out = append(out, "error")
					} else {
						out = append(out, "ok")
					}
				}
				lookup := func() {
					got := make([]byte, c.value.Size)
					note(m.Lookup(uint32(0), got))
					out = append(out, string(got))
				}
				note(m.Update(uint32(0), ones, ebpf.UpdateAny))
				lookup()
				note(m.Update(uint32(0), twos, ebpf.UpdateExist))
				lookup()
				note(m.Update(uint32(1), ones, ebpf.UpdateLock))
				note(m.Update(uint32(0), ones, ebpf.UpdateLock|ebpf.UpdateExist))
				lookup()
				note(memory())
				note(m.Freeze())
				return out
			}
			om := ours.Maps["m"]
			got := results(om, func() error { _, err := om.Memory(); return err })
			if !kernel {
				return
			}
			k, err := ebpf.NewCollection(spec)
			if err != nil {
				t.Skipf("kernel map: %v", err)
			}
			defer k.Close()
			km := k.Maps["m"]
			want := results(km, func() error { _, err := km.Memory(); return err })
			compared++
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("step %d: ours %q, kernel %q", i, got[i], want[i])
					return
				}
			}
			agreed++
		})
	}
	t.Logf("%d of %d map cases agree with the kernel", agreed, compared)
}

// TestMapValueFieldsProgramUpdate has a program write a value of all 0xff
// bytes with bpf_map_update_elem, on both engines and in the kernel: the
// special fields are not copied, so a Go-side lookup reads them as the
// kernel's does.
func TestMapValueFieldsProgramUpdate(t *testing.T) {
	task := &btf.Struct{Name: "task_struct"}
	kptr := &btf.Pointer{Target: &btf.TypeTag{Value: "kptr_untrusted", Type: task}}
	values := map[string]struct {
		typ   ebpf.MapType
		value *btf.Struct
	}{
		"hash_lock":   {ebpf.Hash, vfValue(24, 8, vfOpaque("bpf_spin_lock", 4))},
		"array_lock":  {ebpf.Array, vfValue(24, 8, vfOpaque("bpf_spin_lock", 4))},
		"array_timer": {ebpf.Array, vfValue(32, 8, vfOpaque("bpf_timer", 16))},
		"array_kptr":  {ebpf.Array, vfValue(24, 8, kptr)},
		"percpu_kptr": {ebpf.PerCPUArray, vfValue(24, 8, kptr)},
		"lru_timer":   {ebpf.LRUHash, vfValue(32, 8, vfOpaque("bpf_timer", 16))},
	}
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}
	for name, v := range values {
		spec.Maps[name] = &ebpf.MapSpec{Name: name, Type: v.typ, KeySize: 4, ValueSize: v.value.Size, MaxEntries: 2,
			Key: &btf.Int{Name: "key", Size: 4}, Value: v.value}
		insns := asm.Instructions{asm.StoreImm(asm.R10, -4, 0, asm.Word), asm.Mov.Imm(asm.R5, -1)}
		for off := int16(0); off < int16(v.value.Size); off += 8 {
			insns = append(insns, asm.StoreMem(asm.R10, -40+off, asm.R5, asm.DWord))
		}
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, 0).WithReference(name),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
			asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, -40),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnMapUpdateElem.Call(),
			asm.Return(),
		)
		spec.Programs[name] = &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns}
	}
	read := func(m interface{ Lookup(key, valueOut any) error }, perCPU bool, size uint32) (string, error) {
		if perCPU {
			var vs [][]byte
			err := m.Lookup(uint32(0), &vs)
			// The value of the CPU the run was on: the others are zero.
			for _, v := range vs {
				if bytes.ContainsFunc(v, func(r rune) bool { return r != 0 }) {
					return string(v), err
				}
			}
			return "", err
		}
		b := make([]byte, size)
		err := m.Lookup(uint32(0), b)
		return string(b), err
	}
	want := map[string]string{}
	if os.Getuid() == 0 && rlimit.RemoveMemlock() == nil {
		if k, err := ebpf.NewCollection(spec); err == nil {
			defer k.Close()
			for name, p := range k.Programs {
				if ret, err := p.Run(&ebpf.RunOptions{Data: make([]byte, 64)}); err != nil || ret != 0 {
					t.Fatalf("kernel %s: %d, %v", name, ret, err)
				}
				v, err := read(k.Maps[name], values[name].typ == ebpf.PerCPUArray, values[name].value.Size)
				if err != nil {
					t.Fatalf("kernel %s: lookup: %v", name, err)
				}
				want[name] = v
			}
		} else {
			t.Logf("no kernel oracle: %v", err)
		}
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}})
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		defer coll.Close()
		for name, p := range coll.Programs {
			if ret, _, err := p.Test(make([]byte, 64)); err != nil || ret != 0 {
				t.Fatalf("%s %s: %d, %v", e, name, ret, err)
			}
			got, err := read(coll.Maps[name], values[name].typ == ebpf.PerCPUArray, values[name].value.Size)
			if err != nil {
				t.Fatalf("%s %s: lookup: %v", e, name, err)
			}
			// The special field reads as zero; everything else as written.
			v := values[name].value
			exp := bytes.Repeat([]byte{0xff}, int(v.Size))
			s := v.Members[1]
			size, _ := btf.Sizeof(s.Type)
			clear(exp[s.Offset/8 : int(s.Offset/8)+size])
			if got != string(exp) {
				t.Errorf("%s %s: %x, want %x", e, name, got, exp)
			}
			if w, ok := want[name]; ok && got != w {
				t.Errorf("%s %s: %x, kernel %x", e, name, got, w)
			}
		}
	}
	t.Logf("%d of %d programs compared with the kernel", len(want), len(values))
}

// TestMapValueFieldsCreation creates maps with special fields through the
// public API and through cilium/ebpf in the kernel: the same ones fail.
// cilium/ebpf creates a map again without its BTF where the kernel refuses
// the BTF with EINVAL, but not where loading the BTF itself fails.
func TestMapValueFieldsCreation(t *testing.T) {
	lock := vfOpaque("bpf_spin_lock", 4)
	fwd := &btf.Pointer{Target: &btf.TypeTag{Value: "kptr", Type: &btf.Fwd{Name: "task_struct"}}}
	two := &btf.Struct{Name: "val", Size: 16, Members: []btf.Member{{Name: "l", Type: lock}, {Name: "k", Type: fwd, Offset: 64}}}
	twoTimers := &btf.Struct{Name: "val", Size: 32, Members: []btf.Member{{Name: "a", Type: vfOpaque("bpf_timer", 16)}, {Name: "b", Type: vfOpaque("bpf_timer", 16), Offset: 128}}}
	cases := []struct {
		name  string
		typ   ebpf.MapType
		flags uint32
		key   btf.Type
		value *btf.Struct
		fails bool
	}{
		{name: "lock and kptr to a forward declaration", typ: ebpf.Hash, value: two, fails: true},
		{name: "lock in percpu hash", typ: ebpf.PerCPUHash, value: vfValue(24, 8, lock), fails: true},
		{name: "lock with rdonly prog", typ: ebpf.Array, flags: 1 << 7, value: vfValue(24, 8, lock), fails: true},
		{name: "lock with key of other size", typ: ebpf.Hash, key: vfU64, value: vfValue(24, 8, lock)},
		{name: "lock without key", typ: ebpf.Hash, key: &btf.Void{}, value: vfValue(24, 8, lock)},
		{name: "two timers", typ: ebpf.Array, value: twoTimers},
		{name: "lock in lru", typ: ebpf.LRUHash, value: vfValue(24, 8, lock), fails: true},
	}
	kernel := os.Getuid() == 0 && rlimit.RemoveMemlock() == nil
	compared := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := c.key
			if key == nil {
				key = &btf.Int{Name: "key", Size: 4}
			}
			spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": {
				Name: "m", Type: c.typ, KeySize: 4, ValueSize: c.value.Size, MaxEntries: 2, Flags: c.flags, Key: key, Value: c.value,
			}}}
			ours, err := bpfvm.NewCollection(spec)
			if err == nil {
				ours.Close()
			}
			if (err != nil) != c.fails {
				t.Errorf("bpfvm: %v, want failure %v", err, c.fails)
			}
			if !kernel {
				return
			}
			k, kerr := ebpf.NewCollection(spec)
			if kerr == nil {
				k.Close()
			}
			compared++
			if (kerr != nil) != c.fails {
				t.Errorf("kernel: %v, want failure %v", kerr, c.fails)
			}
		})
	}
	t.Logf("%d of %d creations compared with the kernel", compared, len(cases))
}
