package bpfvm_test

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
)

// Programs may read struct bpf_map fields through a map pointer, as the
// kernel allows: the values are the kernel's, verified or not, on both
// engines.
func TestMapPointerFields(t *testing.T) {
	fields := []struct {
		name string
		off  int16
	}{{"map_type", 64}, {"key_size", 68}, {"value_size", 72}, {"max_entries", 76}, {"map_flags", 88}}
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"arr":  {Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 12, MaxEntries: 5, Flags: 1 << 7},
			"hash": {Name: "hash", Type: ebpf.Hash, KeySize: 8, ValueSize: 16, MaxEntries: 33, Flags: 1},
			"dev":  {Name: "dev", Type: ebpf.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 2},
		},
		Programs: map[string]*ebpf.ProgramSpec{},
	}
	for m := range spec.Maps {
		for _, f := range fields {
			spec.Programs[m+"_"+f.name] = &ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
				asm.LoadMapPtr(asm.R1, 0).WithReference(m),
				asm.LoadMem(asm.R0, asm.R1, f.off, asm.Word),
				asm.Return(),
			}}
		}
	}
	want := map[string]uint32{}
	for name, ms := range spec.Maps {
		flags := ms.Flags
		if ms.Type == ebpf.DevMap {
			flags |= 1 << 7 // BPF_F_RDONLY_PROG, which the kernel sets
		}
		for f, v := range map[string]uint32{"map_type": uint32(ms.Type), "key_size": ms.KeySize, "value_size": ms.ValueSize, "max_entries": ms.MaxEntries, "map_flags": flags} {
			want[name+"_"+f] = v
		}
	}
	if os.Getuid() == 0 && rlimit.RemoveMemlock() == nil {
		if k, err := ebpf.NewCollection(spec); err == nil {
			defer k.Close()
			for name, p := range k.Programs {
				got, err := p.Run(&ebpf.RunOptions{Data: make([]byte, 64)})
				if err != nil || got != want[name] {
					t.Errorf("kernel %s: %d, %v; want %d", name, got, err, want[name])
				}
			}
		} else {
			t.Logf("no kernel oracle: %v", err)
		}
	}
	for _, noVerify := range []bool{false, true} {
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, NoVerify: noVerify}})
			if err != nil {
				t.Fatalf("%s noVerify=%v: %v", e, noVerify, err)
			}
			defer coll.Close()
			for name, p := range coll.Programs {
				got, _, err := p.Test(make([]byte, 64))
				if err != nil || got != want[name] {
					t.Errorf("%s noVerify=%v %s: %d, %v; want %d", e, noVerify, name, got, err, want[name])
				}
			}
		}
	}
}
