package bpfvm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// TestMapFieldsObject loads each program of testdata/map_fields.o (a map
// whose value has a bpf_spin_lock, a __kptr and a __kptr_untrusted) alone
// through the public API and into the kernel through cilium/ebpf, and
// compares the verdicts and messages; it then runs the accepted ones on
// both engines and in the kernel.
func TestMapFieldsObject(t *testing.T) {
	cases := []struct {
		prog string
		err  string // "" accepts; the kernel's message
		// ret, when set, is what the program returns (in the kernel
		// too).
		ret uint32
	}{
		{prog: "count"},
		{prog: "clear_untrusted"},
		{prog: "read_lock", err: "bpf_spin_lock cannot be accessed directly by load/store"},
		{prog: "write_lock", err: "bpf_spin_lock cannot be accessed directly by load/store"},
		{prog: "store_ref", err: "store to referenced kptr disallowed"},
		{prog: "half_kptr", err: "kptr access size must be BPF_DW"},
		{prog: "update_from_value", err: "bpf_spin_lock cannot be accessed directly by load/store"},
		{prog: "load_untrusted"},
		{prog: "deref_untrusted", ret: 1},
		{prog: "deref_ref", ret: 1},
		{prog: "store_untrusted", ret: 2},
		{prog: "locked_count"},
		{prog: "exit_locked", err: "BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region"},
		{prog: "call_locked", err: "function calls are not allowed while holding a lock"},
	}
	kernel := haveKernel(t)
	compared, agreed := 0, 0
	for _, c := range cases {
		t.Run(c.prog, func(t *testing.T) {
			spec, err := loader.LoadCollectionSpec("testdata/map_fields.o")
			if err != nil {
				t.Fatal(err)
			}
			for name := range spec.Programs {
				if name != c.prog {
					delete(spec.Programs, name)
				}
			}
			vm, err := bpfvm.NewCollection(spec)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("bpfvm rejects: %v", err)
			case c.err != "" && err == nil:
				vm.Close()
				t.Fatalf("bpfvm accepts, want %q", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("bpfvm: %v, want %q", err, c.err)
			}
			if vm != nil {
				defer vm.Close()
			}
			if !kernel {
				return
			}
			k, kerr := ebpf.NewCollection(spec)
			if k != nil {
				defer k.Close()
			}
			compared++
			var ve *ebpf.VerifierError
			switch {
			case c.err == "" && kerr != nil:
				t.Fatalf("kernel rejects: %v", kerr)
			case c.err != "" && !errors.As(kerr, &ve):
				t.Fatalf("kernel: %v, want a verifier error", kerr)
			case c.err != "" && !strings.Contains(strings.Join(ve.Log, "\n"), c.err):
				t.Fatalf("kernel log lacks %q:\n%s", c.err, strings.Join(ve.Log, "\n"))
			}
			agreed++
			if vm == nil || k == nil {
				return
			}
			want, kerr := k.Programs[c.prog].Run(&ebpf.RunOptions{Data: make([]byte, 64)})
			if kerr != nil {
				t.Fatal(kerr)
			}
			if c.ret != 0 && want != c.ret {
				t.Errorf("kernel returns %d, want %d", want, c.ret)
			}
			var theirs [32]byte
			if err := k.Maps["vals"].Lookup(uint32(0), &theirs); err != nil {
				t.Fatal(err)
			}
			for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}})
				if err != nil {
					t.Fatal(err)
				}
				defer coll.Close()
				got, _, err := coll.Programs[c.prog].Test(make([]byte, 64))
				if err != nil || got != want {
					t.Errorf("%s: %d, %v; kernel %d", e, got, err, want)
				}
				var ours [32]byte
				if err := coll.Maps["vals"].Lookup(uint32(0), &ours); err != nil {
					t.Fatal(err)
				}
				if ours != theirs {
					t.Errorf("%s: value %x, kernel %x", e, ours, theirs)
				}
			}
		})
	}
	t.Logf("%d of %d programs agree with the kernel", agreed, compared)
}
