package bpfvm

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// With run-time checks a verified program that goes wrong stops with
// vm.ErrMemory instead of touching memory it does not own. A host
// bpf_map_lookup_elem that returns a pointer past the value stands in for a
// verifier bug: the verifier takes R0 for the value, the checks do not.
func TestChecksStopVerifiedPrograms(t *testing.T) {
	lying := func(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
		v, err := helper.Builtin().Func(1)(e, r1, r2, 0, 0, 0)
		if v == 0 || err != nil {
			return v, err
		}
		return v + 1<<20, nil
	}
	const src = `
		*(u32 *)(r10 -4) = 0
		r1 = map[fd:0] ll
		r2 = r10
		r2 += -4
		call bpf_map_lookup_elem#1
		if r0 == 0 goto out
		r1 = 7
		*(u64 *)(r0 +8) = r1
	out:
		r0 = 2
		exit`
	insns, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts ProgramOptions
	}{
		{"checks on", ProgramOptions{Checks: ChecksOn}},
		{"unprivileged default", ProgramOptions{Unprivileged: true}},
	} {
		for _, engine := range []Engine{EngineInterpreter, EngineJIT} {
			c := runner.NewCPUs(1)
			m, err := newMap(&ebpf.MapSpec{Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1}, c)
			if err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			opts.Engine, opts.NoInline = engine, true // the inlined lookup would not call the host helper
			opts.Helpers = map[int32]vm.Helper{1: lying}
			opts.HelperProtos = map[int32]*verifier.Proto{1: helper.Builtin().Proto(1)}
			p, err := newProgram("lie", ebpf.XDP, insns, []*Map{m}, c, opts)
			if err != nil {
				t.Fatalf("%s, %s: load: %v", tc.name, engine, err)
			}
			if !p.Verified() || !p.Checked() {
				t.Errorf("%s, %s: verified %v, checked %v", tc.name, engine, p.Verified(), p.Checked())
			}
			_, _, err = p.Test(make([]byte, 64))
			if !errors.Is(err, vm.ErrMemory) {
				t.Errorf("%s, %s: run: %v, want %v", tc.name, engine, err, vm.ErrMemory)
			}
			p.Close()
			c.Close()
			m.Close()
		}
	}
}

// Checks defaults: on for Unprivileged loads only, and settable either way.
func TestChecksDefault(t *testing.T) {
	insns, err := isa.Assemble("r0 = 2\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts ProgramOptions
		want bool
	}{
		{ProgramOptions{}, false},
		{ProgramOptions{Unprivileged: true}, true},
		{ProgramOptions{Unprivileged: true, Checks: ChecksOff}, false},
		{ProgramOptions{Checks: ChecksOn}, true},
		{ProgramOptions{NoVerify: true, Checks: ChecksOff}, true}, // unverified: always checked
	} {
		p, err := NewRawProgram("p", ebpf.XDP, insns, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if p.Checked() != tc.want {
			t.Errorf("%+v: checked %v, want %v", tc.opts, p.Checked(), tc.want)
		}
		if p.Engine() == EngineJIT && p.JITInfo().CodeSize == 0 {
			t.Errorf("%+v: no machine code", tc.opts)
		}
		p.Close()
	}
	if _, err := NewRawProgram("p", ebpf.XDP, insns, ProgramOptions{Checks: 7}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Checks(7): %v", err)
	}
}

// The JIT's checked code skips the check of accesses through R10 plus a
// constant inside the frame; anything else through such a register is
// still checked.
func TestChecksFramePointerCopies(t *testing.T) {
	for _, tc := range []struct {
		src   string
		fault bool
	}{
		{"r2 = r10\nr2 += -8\n*(u64 *)(r2 +0) = 1\nr0 = *(u64 *)(r2 +0)\nexit", false},
		{"r2 = r10\nr2 += 8\nr0 = *(u64 *)(r2 +0)\nexit", true},
		{"r2 = r10\nr2 += -8\nr2 += 16\nr0 = *(u64 *)(r2 +0)\nexit", true},
		{"r2 = r10\nr2 -= -16\nr0 = *(u64 *)(r2 -8)\nexit", true},
		{"r2 = r10\nr3 = r2\nr3 += -4\n*(u32 *)(r3 +0) = 1\nr0 = *(u32 *)(r3 +0)\nexit", false},
		{"r2 = r10\nr3 = r2\nr3 += -4\nr0 = *(u64 *)(r3 +0)\nexit", true},
		{"r2 = r10\nr2 = 0x1000 ll\nr0 = *(u64 *)(r2 -8)\nexit", true},
		{"r2 = r10\nw2 += -8\nr0 = *(u64 *)(r2 +0)\nexit", true},
		{"r2 = r10\nr2 += -8\nr2 *= 1\nr2 += 4096\nr0 = *(u64 *)(r2 +0)\nexit", true},
	} {
		insns, err := isa.Assemble(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		for _, engine := range []Engine{EngineInterpreter, EngineJIT} {
			p, err := NewRawProgram("fp", ebpf.XDP, insns, ProgramOptions{NoVerify: true, Engine: engine})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = p.Test(make([]byte, 64))
			if errors.Is(err, vm.ErrMemory) != tc.fault {
				t.Errorf("%s:\n%s\nrun: %v, want fault %v", engine, tc.src, err, tc.fault)
			}
			p.Close()
		}
	}
}
