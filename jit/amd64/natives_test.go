//go:build amd64 && linux

package amd64

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// Helper ids the tests map to native routines.
const (
	idRandom = 7
	idCPU    = 8
	idNuma   = 42
)

func testNatives(id int32) vm.Native {
	switch id {
	case idCPU:
		return vm.NativeCPU
	case idRandom:
		return vm.NativeRandom
	case idNuma:
		return vm.NativeZero
	}
	return vm.NoNative
}

// goHelpers are the Go helpers the native routines stand for.
func goHelpers(id int32) vm.Helper {
	switch id {
	case idCPU:
		return func(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) { return uint64(e.CPU), nil }
	case idRandom:
		return func(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) { return uint64(e.Rand.Uint32()), nil }
	case idNuma:
		return func(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) { return 0, nil }
	}
	return func(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) { return r1 + 1, nil }
}

// nativeProg mixes native routines with a Go helper and checks that R1-R5
// survive the native calls: it returns a hash of everything it saw.
const nativeProg = `
	r1 = 11
	r2 = 22
	r3 = 33
	r4 = 44
	r5 = 55
	r6 = 0
	call 8
	r6 += r0
	r6 *= 31
	call 7
	r6 += r0
	r6 *= 31
	call 7
	r6 += r0
	r6 *= 31
	call 42
	r6 += r0
	r6 += r1
	r6 *= 31
	r6 += r2
	r6 *= 31
	r6 += r3
	r6 *= 31
	r6 += r4
	r6 *= 31
	r6 += r5
	r1 = r6
	call 1
	r0 += r6
	exit`

// TestNativeCalls runs native routines in every call form (near rel32, far
// indirect, far through the retpoline) against the interpreter with the Go
// helpers, with the same generator seed.
func TestNativeCalls(t *testing.T) {
	prog, err := isa.Assemble(nativeProg)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := interp.New(prog, goHelpers)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		opts          Options
		tier          Tier
		indirect, ret bool
	}{
		{"near", Options{}, TierNear, false, false},
		{"near retpoline", Options{Retpoline: true}, TierNear, false, false},
		{"far", Options{Far: true}, TierFar, true, false},
		{"far retpoline", Options{Far: true, Retpoline: true}, TierFar, true, true},
		{"far blinded", Options{Far: true, Blind: true}, TierFar, true, false},
	} {
		for _, checked := range []bool{false, true} {
			opts := tc.opts
			opts.Natives = testNatives
			opts.Modes = Unchecked
			if checked {
				opts.Modes = Checked
			}
			jp, err := Compile(prog, goHelpers, opts)
			if err != nil {
				t.Fatal(err)
			}
			info := jp.Info(checked)
			if info.Tier != tc.tier || info.Indirect != tc.indirect || info.Retpoline != tc.ret || info.NativeCalls != 4 {
				t.Errorf("%s: info %+v", tc.name, info)
			}
			for cpu := range 3 {
				te := newEnv(t, checked, 0)
				te.env.CPU = cpu
				var r1, r2 vm.Rand
				r1.Seed(uint64(cpu), 99)
				r2 = r1
				te.env.Rand = &r1
				got, err := jp.Run(te.env, 0, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				te.env.Rand = &r2
				want, err := ip.Run(te.env, 0, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				if got != want || r1 != r2 {
					t.Errorf("%s checked=%v cpu %d: jit %#x (state %v), interp %#x (state %v)", tc.name, checked, cpu, got, r1, want, r2)
				}
			}
			// Without env.Rand the routine uses the context's own generator.
			te := newEnv(t, checked, 0)
			if _, err := jp.Run(te.env, 0, 0, 0); err != nil {
				t.Fatal(err)
			}
			jp.Close()
		}
	}
}

// TestNativeCallConvergence places many native calls around jumps whose
// sizes depend on the calls' form, so that the passes after allocation
// move code, and checks results stay right.
func TestNativeCallConvergence(t *testing.T) {
	src := "r6 = 0\nr7 = 3\nloop:\n"
	for i := range 40 {
		src += "call 8\nr6 += r0\nif r6 > 1000 goto out\n"
		if i%8 == 0 {
			src += "r6 += 1\n"
		}
	}
	src += "r7 += -1\nif r7 != 0 goto loop\nout:\nr0 = r6\nexit"
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	near, err := Compile(prog, goHelpers, Options{Modes: Unchecked, Natives: testNatives})
	if err != nil {
		t.Fatal(err)
	}
	defer near.Close()
	far, err := Compile(prog, goHelpers, Options{Modes: Unchecked, Natives: testNatives, Far: true})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	ni, fi := near.Info(false), far.Info(false)
	if ni.Tier != TierNear || ni.Indirect || fi.Tier != TierFar || !fi.Indirect {
		t.Fatalf("near %+v far %+v", ni, fi)
	}
	// Each direct call is 7 bytes shorter than movabs + call rax.
	if fi.CodeSize-ni.CodeSize < 7*40 {
		t.Errorf("near code %d bytes, far %d: calls did not shrink", ni.CodeSize, fi.CodeSize)
	}
	te := newEnv(t, false, 0)
	te.env.CPU = 5
	for _, p := range []*Program{near, far} {
		v, err := p.Run(te.env, 0, 0, 0)
		if want := uint64(3 * (40*5 + 5)); err != nil || v != want {
			t.Errorf("got %d, %v; want %d", v, err, want)
		}
	}
}

// TestMemoryTiers fills a small near limit, then a small far limit: the
// code moves to far memory, then Compile fails with ErrNoMemory (the
// caller's cue to use the interpreter); closing programs returns pages.
func TestMemoryTiers(t *testing.T) {
	mem := NewMemory(MemoryConfig{NearLimit: 2 * pageSize, UnprivNearLimit: pageSize, FarLimit: 2 * pageSize})
	prog, err := isa.Assemble("call 8\nexit")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Modes: Unchecked, Natives: testNatives, Memory: mem}
	compile := func(unpriv bool) (*Program, error) {
		o := opts
		o.Unprivileged = unpriv
		return Compile(prog, goHelpers, o)
	}
	var progs []*Program
	want := []struct {
		unpriv bool
		tier   Tier
	}{
		{true, TierNear},  // 1 near page: the unprivileged limit
		{true, TierFar},   // over the unprivileged limit
		{false, TierNear}, // privileged: 2 pages
		{false, TierFar},  // near full
	}
	for i, w := range want {
		p, err := compile(w.unpriv)
		if err != nil {
			t.Fatalf("program %d: %v", i, err)
		}
		progs = append(progs, p)
		info := p.Info(false)
		if info.Tier != w.tier || info.Pages != 1 || info.Indirect != (w.tier == TierFar) {
			t.Fatalf("program %d: %+v, want tier %v", i, info, w.tier)
		}
		te := newEnv(t, false, 0)
		te.env.CPU = 3
		if v, err := p.Run(te.env, 0, 0, 0); v != 3 || err != nil {
			t.Fatalf("program %d: %d, %v", i, v, err)
		}
	}
	if n, f := mem.Usage(); n != 2 || f != 2 {
		t.Fatalf("usage near %d far %d", n, f)
	}
	if _, err := compile(false); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("over both limits: %v", err)
	}
	// Closing a near program returns its page: the next one is near again.
	progs[0].Close()
	if n, _ := mem.Usage(); n != 1 {
		t.Fatalf("near pages after close: %d", n)
	}
	// (The unprivileged limit is still used up by the privileged program.)
	if _, err := compile(true); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("unprivileged after close: %v", err)
	}
	p, err := compile(false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Info(false).Tier != TierNear {
		t.Fatalf("after close: %+v", p.Info(false))
	}
	progs = append(progs, p)
	for _, p := range progs {
		p.Close()
	}
	if n, f := mem.Usage(); n != 0 || f != 0 {
		t.Fatalf("usage after closing all: near %d far %d", n, f)
	}
}

// TestNoWritableCode checks that no mapping of the process is writable and
// executable at once while programs of every tier are loaded.
func TestNoWritableCode(t *testing.T) {
	prog, err := isa.Assemble("call 8\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, far := range []bool{false, true} {
		p, err := Compile(prog, goHelpers, Options{Modes: Checked | Unchecked, Natives: testNatives, Far: far})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "rwx") {
			t.Errorf("writable and executable: %s", line)
		}
	}
}
