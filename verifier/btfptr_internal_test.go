package verifier

import (
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/kernelbtf"
)

// walkSpec is the host's kernel types where it has them (all of them),
// else the shipped ones.
func walkSpec(t *testing.T) *btf.Spec {
	if spec, err := btf.LoadKernelSpec(); err == nil {
		return spec
	}
	spec, err := kernelbtf.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestBTFWalkAll walks every struct and union of the kernel's types
// at every offset (a sample of the big ones') and access size, as loads
// through pointers to them do:
// each walk ends (an embedded struct is entered at offset 0 and is
// smaller than what contains it) without a panic, in a scalar, a pointer
// or an error.
func TestBTFWalkAll(t *testing.T) {
	spec := walkSpec(t)
	walks := 0
	for typ, err := range spec.All() {
		if err != nil {
			t.Fatal(err)
		}
		if !isStructType(typ) {
			continue
		}
		_, size := structMembers(typ)
		// Every offset of small structs, a sample of big ones.
		for off := uint32(0); off < size+8; off += size/128 + 1 {
			for _, n := range []uint32{1, 2, 4, 8} {
				untrusted := false
				cur, o := typ, off
				for steps := 0; ; steps++ {
					if steps > 64 {
						t.Fatalf("%s off %d size %d: the walk does not end", typeName(typ), off, n)
					}
					step, err := btfWalk(cur, o, n, &untrusted)
					if err != nil || step.res != walkStruct {
						if err == nil && step.res == walkPtr && !isStructType(step.next) {
							t.Fatalf("%s off %d size %d: a pointer to %T", typeName(typ), off, n, step.next)
						}
						break
					}
					cur, o = step.next, 0
				}
				walks++
			}
		}
	}
	if walks == 0 {
		t.Fatal("no structs")
	}
	t.Logf("%d walks", walks)
}
