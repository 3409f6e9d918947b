package bpfvm

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm/verifier"
)

// ProgramSpec.Flags reach the verifier from both loaders: a 4-byte read at
// the start of the packet (2 bytes past an aligned address, NET_IP_ALIGN)
// is refused under BPF_F_STRICT_ALIGNMENT only, and BPF_F_SLEEPABLE is
// refused for XDP, as the kernel does.
func TestProgramFlags(t *testing.T) {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 4),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R0, asm.R2, 0, asm.Word),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
	for _, c := range []struct {
		name  string
		flags uint32
		err   string
	}{
		{"none", 0, ""},
		{"strict", verifier.FlagStrictAlignment, "misaligned packet access off 2+0+0+0 size 4"},
		{"strict and any", verifier.FlagStrictAlignment | verifier.FlagAnyAlignment, ""},
		{"sleepable", verifier.FlagSleepable, "can be sleepable"},
		{"frags", verifier.FlagXDPHasFrags, ""},
	} {
		spec := &ebpf.ProgramSpec{Name: "p", Type: ebpf.XDP, Flags: c.flags, Instructions: insns, License: "GPL"}
		p, err := NewProgram(spec)
		check := func(how string, err error) {
			t.Helper()
			switch {
			case c.err == "" && err != nil:
				t.Errorf("%s %s: %v", c.name, how, err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("%s %s: %v, want %q", c.name, how, err, c.err)
			case c.err != "":
				var ve *VerifierError
				if !errors.As(err, &ve) {
					t.Errorf("%s %s: %v is not a VerifierError", c.name, how, err)
				}
			}
		}
		check("NewProgram", err)
		if err == nil {
			p.Close()
		}
		coll, err := NewCollection(&ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"p": spec}})
		check("NewCollection", err)
		if err == nil {
			coll.Close()
		}
	}
}
