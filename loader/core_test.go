package loader

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// RelocateCORE reads the target only for programs with relocations, and a
// target that cannot be had is an error saying why.
func TestRelocateCORETargets(t *testing.T) {
	plain, err := LoadCollectionSpec("../testdata/xdp_parse.o")
	if err != nil {
		t.Fatal(err)
	}
	core, err := LoadCollectionSpec("../testdata/core.o")
	if err != nil {
		t.Fatal(err)
	}
	missing := errors.New("no BTF here")
	for _, c := range []struct {
		name    string
		insns   asm.Instructions
		targets func() ([]*btf.Spec, error)
		want    string // substring of the error; "" succeeds
	}{
		{"no relocations, target never read", plain.Programs["xdp_parse_entry"].Instructions, func() ([]*btf.Spec, error) {
			t.Error("targets read for a program without relocations")
			return nil, missing
		}, ""},
		{"target unavailable", core.Programs["core_consts"].Instructions, func() ([]*btf.Spec, error) { return nil, missing }, "no BTF here"},
		{"no target", core.Programs["core_consts"].Instructions, func() ([]*btf.Spec, error) { return nil, nil }, "no target BTF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns := make(asm.Instructions, len(c.insns))
			copy(insns, c.insns)
			_, err := RelocateCORE(insns, nil, c.targets)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrCORE) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want ErrCORE with %q", err, c.want)
			}
		})
	}
}
