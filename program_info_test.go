package bpfvm_test

import (
	"errors"
	"testing"

	"github.com/bpfvm/bpfvm"
)

// TestProgramInfoKernel: Program.Info gives the kernel's tag, name, type
// and map count for the same programs.
func TestProgramInfoKernel(t *testing.T) {
	compared := 0
	for _, file := range []string{"examples/xdp_counter/xdp_counter.o", "testdata/helpers_maps.o", "testdata/rodata.o", "testdata/subprog.o", "testdata/globals.o"} {
		coll, err := bpfvm.LoadCollection(file)
		if err != nil {
			t.Fatal(err)
		}
		defer coll.Close()
		kcoll := kernelCollection(t, file)
		for name, p := range coll.Programs {
			info, err := p.Info()
			if err != nil {
				t.Fatal(err)
			}
			if id, ok := info.ID(); !ok || uint32(id) != p.ID() || info.Type != p.Type() {
				t.Errorf("%s: id %d, type %v", name, id, info.Type)
			}
			if n, ok := info.VerifiedInstructions(); !ok || int(n) != p.Stats().Processed {
				t.Errorf("%s: verified %d, want %d", name, n, p.Stats().Processed)
			}
			if kcoll == nil || kcoll.Programs[name] == nil {
				continue
			}
			kinfo, err := kcoll.Programs[name].Info()
			if err != nil {
				t.Fatal(err)
			}
			kmaps, _ := kinfo.MapIDs()
			maps, _ := info.MapIDs()
			if info.Tag != kinfo.Tag || info.Name != kinfo.Name || info.Type != kinfo.Type || len(maps) != len(kmaps) {
				t.Errorf("%s %s: tag %s name %q type %v %d maps, kernel's tag %s name %q type %v %d maps", file, name, info.Tag, info.Name, info.Type, len(maps), kinfo.Tag, kinfo.Name, kinfo.Type, len(kmaps))
			}
			compared++
		}
		p := coll.Programs[func() string {
			for n := range coll.Programs {
				return n
			}
			return ""
		}()]
		p.Close()
		if _, err := p.Info(); !errors.Is(err, bpfvm.ErrClosed) {
			t.Errorf("info of a closed program: %v", err)
		}
	}
	t.Logf("%d programs compared with the kernel", compared)
}
