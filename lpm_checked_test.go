package bpfvm_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm"
)

// wildWriteSpec is an unverified program that looks up key {32, 10.1.2.3}
// in map m and writes 8 bytes at off from the value it found.
func wildWriteSpec(m *ebpf.MapSpec, off int16) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"m": m},
		Programs: map[string]*ebpf.ProgramSpec{"wild": {
			Name: "wild", Type: ebpf.XDP, License: "GPL",
			Instructions: asm.Instructions{
				asm.StoreImm(asm.R10, -8, 32, asm.Word),
				asm.StoreImm(asm.R10, -4, 0x0302010a, asm.Word),
				asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
				asm.Mov.Reg(asm.R2, asm.R10),
				asm.Add.Imm(asm.R2, -8),
				asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, "out"),
				asm.Mov.Imm(asm.R1, -1),
				asm.StoreMem(asm.R0, off, asm.R1, asm.DWord),
				asm.Mov.Imm(asm.R0, 1).WithSymbol("out"),
				asm.Return(),
			},
		}},
	}
}

// An unverified program that writes outside its LPM value, over where a
// node's links would be, gets an error in checked mode; the trie stays
// intact.
func TestLPMCheckedWildWrite(t *testing.T) {
	spec := &ebpf.MapSpec{Name: "m", Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 4, Flags: 1}
	for _, off := range []int16{-32, -24, -8, 8, 64} {
		coll, err := bpfvm.NewCollectionWithOptions(wildWriteSpec(spec, off), bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoVerify: true}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []lpmKey4{{8, [4]byte{10}}, {32, [4]byte{10, 1, 2, 3}}, {24, [4]byte{10, 1, 2}}} {
			if err := coll.Maps["m"].Put(p, uint64(p.PrefixLen)); err != nil {
				t.Fatal(err)
			}
		}
		_, err = coll.Programs["wild"].Run(&bpfvm.RunOptions{Data: make([]byte, 64)})
		var v uint64
		lerr := coll.Maps["m"].Lookup(lpmKey4{32, [4]byte{10, 1, 2, 3}}, &v)
		t.Logf("off %d: run %v; lookup %d %v", off, err, v, lerr)
		if lerr != nil {
			t.Errorf("off %d: lookup after the wild write: %v", off, lerr)
		}
		coll.Close()
	}
}
