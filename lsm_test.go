package bpfvm_test

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// TestLSMObject loads testdata/lsm.o's LSM programs, one sleepable, with
// their hooks from their sections, and runs them on both engines, checked
// and not: a refusal of an earlier program passes through as the 64-bit
// context slot holds it, a file the world does not map reads as opened
// for reading (allowed), and each exec is counted. The kernel takes them
// where it loads LSM programs (not on kernels without BPF LSM or
// trampolines, which give EPERM).
func TestLSMObject(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	spec, err := loader.LoadCollectionSpec("testdata/lsm.o")
	if err != nil {
		t.Fatal(err)
	}
	dw, ec := spec.Programs["deny_write"], spec.Programs["exec_count"]
	if dw.Type != ebpf.LSM || dw.AttachType != ebpf.AttachLSMMac || dw.AttachTo != "file_open" {
		t.Fatalf("deny_write: %s %s %q", dw.Type, dw.AttachType, dw.AttachTo)
	}
	if ec.AttachTo != "bprm_check_security" || ec.Flags&verifier.FlagSleepable == 0 {
		t.Fatalf("exec_count: %q flags %#x", ec.AttachTo, ec.Flags)
	}
	slots := func(v ...uint64) []byte {
		b := make([]byte, 8*progtype.MaxTracingArgs)
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], x)
		}
		return b
	}
	const eperm = 1<<64 - 1 - 12 // -13 in the u64 slot
	for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				prog string
				ctx  []byte
				want uint64
			}{
				{"deny_write", slots(0x1000, eperm), eperm},
				{"deny_write", slots(0x1000, 0), 0},
				{"exec_count", slots(0x2000), 0},
				{"exec_count", slots(0x2000), 0},
			} {
				res, err := coll.Programs[c.prog].Execute(&bpfvm.RunOptions{Context: c.ctx})
				if err != nil || res.R0 != c.want {
					t.Errorf("%s on %v checks %v: %#x, %v; want %#x", c.prog, e, checks, res.R0, err, c.want)
				}
			}
			var denied, execs uint64
			if err := coll.Maps["counts"].Lookup(uint32(0), &denied); err != nil {
				t.Fatal(err)
			}
			if err := coll.Maps["counts"].Lookup(uint32(1), &execs); err != nil {
				t.Fatal(err)
			}
			if denied != 0 || execs != 2 {
				t.Errorf("%v checks %v: %d denied, %d execs; want 0, 2", e, checks, denied, execs)
			}
			coll.Close()
		}
	}
	if !haveKernel(t) {
		return
	}
	kc, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) {
		t.Logf("kernel: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	kc.Close()
}
