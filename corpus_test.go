package bpfvm_test

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// Every program of the C corpus gets the same verdict from bpfvm's verifier
// as from the kernel's (where bpf() is permitted).
func TestCorpusVerdicts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.o")
	more, _ := filepath.Glob("examples/*/*.o")
	files = append(files, more...)
	kernel := os.Getuid() == 0 && rlimit.RemoveMemlock() == nil
	for _, file := range files {
		spec, err := loader.LoadCollectionSpec(file)
		if err != nil {
			continue // the loader tests cover objects that must not load
		}
		var names []string
		for name := range spec.Programs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t.Run(filepath.Base(file)+"/"+name, func(t *testing.T) {
				one := spec.Copy()
				for other := range one.Programs {
					if other != name {
						delete(one.Programs, other)
					}
				}
				if one.Programs[name].Type == ebpf.UnspecifiedProgram || one.Programs[name].SectionName == "host/policy" {
					t.Skip("host-defined program type")
				}
				coll, err := bpfvm.NewCollection(one)
				var ve *bpfvm.VerifierError
				switch {
				case err == nil:
					coll.Close()
				case errors.As(err, &ve):
				default:
					t.Fatalf("load: %v", err)
				}
				if !kernel {
					return
				}
				kcoll, kerr := ebpf.NewCollection(one)
				if kerr == nil {
					kcoll.Close()
				}
				var kve *ebpf.VerifierError
				if kerr != nil && !errors.As(kerr, &kve) {
					t.Skipf("kernel load: %v", kerr)
				}
				if (err == nil) != (kerr == nil) {
					t.Errorf("bpfvm: %v; kernel: %v", err, kerr)
				}
			})
		}
	}
}
