package bpfvm_test

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
)

// Lookups in devmaps and xskmaps return NULL where the kernel keeps no
// device or socket (an empty slot, a key out of range) and the element
// otherwise, verified or not, on both engines, as the running kernel does
// for the devmap (an xskmap cannot hold sockets here, so the kernel's is
// empty).
func TestRedirectMapLookup(t *testing.T) {
	// The program looks up the key in the packet's first 4 bytes and
	// returns 100 on a miss, else the element's first 4 bytes.
	prog := func(m string) asm.Instructions {
		return asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 4),
			asm.Mov.Imm(asm.R0, 0),
			asm.JGT.Reg(asm.R4, asm.R3, "exit"),
			asm.LoadMem(asm.R3, asm.R2, 0, asm.Word),
			asm.StoreMem(asm.RFP, -4, asm.R3, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(m),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Mov.Imm(asm.R0, 100),
			asm.JEq.Imm(asm.R1, 0, "exit"),
			asm.LoadMem(asm.R0, asm.R1, 0, asm.Word),
			asm.Return().WithSymbol("exit"),
		}
	}
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"dev": {Name: "dev", Type: ebpf.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 4},
			"xsk": {Name: "xsk", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"dev": {Name: "dev", Type: ebpf.XDP, License: "GPL", Instructions: prog("dev")},
			"xsk": {Name: "xsk", Type: ebpf.XDP, License: "GPL", Instructions: prog("xsk")},
		},
	}
	// Device 1 (lo) in slot 0, slot 1 empty.
	devVal := make([]byte, 8)
	binary.LittleEndian.PutUint32(devVal, 1)
	packet := func(key uint32) []byte {
		b := make([]byte, 64)
		binary.LittleEndian.PutUint32(b, key)
		return b
	}
	cases := []struct {
		prog string
		key  uint32
		want uint32
	}{
		{"dev", 0, 1},
		{"dev", 1, 100},
		{"dev", 9, 100},
		{"xsk", 0, 100},
		{"xsk", 9, 100},
	}

	var kern *ebpf.Collection
	if os.Getuid() == 0 && rlimit.RemoveMemlock() == nil {
		if k, err := ebpf.NewCollection(spec); err == nil {
			kern = k
			defer k.Close()
			if err := k.Maps["dev"].Put(uint32(0), devVal); err != nil {
				t.Fatal(err)
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
			if err := coll.Maps["dev"].Put(uint32(0), devVal); err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				got, _, err := coll.Programs[c.prog].Test(packet(c.key))
				if err != nil || got != c.want {
					t.Errorf("%s %s noVerify=%v key %d: %d, %v; want %d", c.prog, e, noVerify, c.key, got, err, c.want)
				}
			}
			// A socket in an xskmap slot (bpfvm's sockets are values)
			// makes the lookup hit: its queue_id is the value.
			if err := coll.Maps["xsk"].Put(uint32(2), uint32(7)); err != nil {
				t.Fatal(err)
			}
			if got, _, err := coll.Programs["xsk"].Test(packet(2)); err != nil || got != 7 {
				t.Errorf("xsk %s noVerify=%v key 2 after Put: %d, %v; want 7", e, noVerify, got, err)
			}
		}
	}
	if kern == nil {
		return
	}
	for _, c := range cases {
		got, err := kern.Programs[c.prog].Run(&ebpf.RunOptions{Data: packet(c.key)})
		if err != nil || got != c.want {
			t.Errorf("kernel %s key %d: %d, %v; want %d", c.prog, c.key, got, err, c.want)
		}
	}
}
