package loader

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/kernelbtf"
)

// patchPortable, which bpfvm uses where cilium/ebpf's COREFixup.Apply
// refuses to run, patches every relocation of the CO-RE test objects as
// Apply does, against every target, with the instruction as compiled and
// with one that disagrees with its relocation record.
func TestPatchPortable(t *testing.T) {
	var targets []*btf.Spec
	if host, err := btf.LoadKernelSpec(); err == nil {
		targets = append(targets, host)
	}
	shipped, err := kernelbtf.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	// A target with none of the types: every relocation poisons or says
	// "does not exist".
	var b btf.Builder
	if _, err := b.Add(&btf.Int{Name: "int", Size: 4}); err != nil {
		t.Fatal(err)
	}
	empty, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	targets = append(targets, shipped, empty)
	n := 0
	for _, file := range []string{"core.o", "core_poison.o", "core_bench.o"} {
		spec, err := LoadCollectionSpec("../testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for name, ps := range spec.Programs {
			var relos []*btf.CORERelocation
			var at []int
			for i := range ps.Instructions {
				if r := btf.CORERelocationMetadata(&ps.Instructions[i]); r != nil {
					relos, at = append(relos, r), append(at, i)
				}
			}
			for ti, target := range targets {
				var local btf.Builder
				fixups, err := btf.CORERelocate(relos, []*btf.Spec{target}, binary.LittleEndian, local.Add)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for j := range fixups {
					for _, skew := range []int16{0, 1} {
						want, got := ps.Instructions[at[j]], ps.Instructions[at[j]]
						want.Offset += skew
						want.Constant += int64(skew)
						got.Offset += skew
						got.Constant += int64(skew)
						werr := fixups[j].Apply(&want)
						gerr := patchPortable(&fixups[j], &got)
						where := fmt.Sprintf("%s target %d %s skew %d", name, ti, relos[j], skew)
						if (werr == nil) != (gerr == nil) {
							t.Fatalf("%s: Apply: %v, patchPortable: %v", where, werr, gerr)
						}
						if werr == nil && !sameInstruction(want, got) {
							t.Errorf("%s: Apply %v, patchPortable %v", where, want, got)
						}
						n++
					}
				}
			}
		}
	}
	if n < 2000 {
		t.Errorf("compared %d fixups, want the objects' thousands", n)
	}
}

func sameInstruction(a, b asm.Instruction) bool {
	if a.OpCode != b.OpCode || a.Dst != b.Dst || a.Src != b.Src || a.Offset != b.Offset || a.Constant != b.Constant {
		return false
	}
	as, bs := a.Source(), b.Source()
	return (as == nil) == (bs == nil) && (as == nil || as.String() == bs.String())
}
