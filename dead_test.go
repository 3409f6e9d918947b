package bpfvm

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
)

// Code the verifier never reached cannot run: it becomes isa.OpDead, and in
// privileged programs the branch into it is hard-wired away, as the
// kernel's dead-code sanitising does. Here the verifier elides the NULL
// check of a constant-key array lookup, so the branch to a write into a
// read-only map is never explored (the kernel accepts the program too: see
// verifier's "dead branch writes a read-only map"); the write must be gone
// from the program that runs, on both engines, inlined or not.
func TestDeadCodeSanitized(t *testing.T) {
	const priv = `
		*(u32 *)(r10 -4) = 0
		r1 = map[fd:0] ll
		r2 = r10
		r2 += -4
		call bpf_map_lookup_elem#1
		if r0 == 0 goto dead
		r0 = *(u64 *)(r0 +0)
		exit
	dead:
		r1 = map_value[fd:1]+0 ll
		*(u64 *)(r1 +0) = 1
		r0 = 0
		exit`
	const unpriv = `
		r0 = 2
		if r0 == 1 goto dead
		*(u32 *)(r10 -4) = 0
		r1 = map[fd:0] ll
		r2 = r10
		r2 += -4
		call bpf_map_lookup_elem#1
		if r0 == 0 goto out
		r0 = *(u64 *)(r0 +0)
		exit
	dead:
		r0 = 7
		exit
	out:
		exit`
	for _, c := range []struct {
		name         string
		src          string
		unprivileged bool
		branch       int   // the branch into dead code
		wired        bool  // hard-wired into a goto +0
		dead         []int // the instructions that must be dead
	}{
		{"privileged", priv, false, 6, true, []int{9, 10, 11, 12, 13}},
		{"unprivileged", unpriv, true, 1, false, []int{11, 12}},
	} {
		insns, err := isa.Assemble(c.src)
		if err != nil {
			t.Fatal(err)
		}
		cpus := runner.NewCPUs(1)
		defer cpus.Close()
		var ms []*Map
		for _, s := range []*ebpf.MapSpec{
			{Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4},
			{Name: "ro", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: maps.FlagRdonlyProg},
		} {
			m, err := newMap(s, cpus)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ms = append(ms, m)
		}
		if err := ms[0].Put(uint32(0), uint64(42)); err != nil {
			t.Fatal(err)
		}
		for _, e := range []Engine{EngineInterpreter, EngineJIT} {
			for _, noInline := range []bool{false, true} {
				p, err := newProgram("dead", ebpf.XDP, insns, ms, cpus, ProgramOptions{Engine: e, NoInline: noInline, Unprivileged: c.unprivileged})
				if err != nil {
					t.Fatalf("%s %s: %v", c.name, e, err)
				}
				defer p.Close()
				x := p.XlatedInstructions()
				// Inlining only grows the lookup, which comes before
				// everything checked here: count from the end.
				shift := len(x) - len(insns)
				for _, pc := range c.dead {
					if x[pc+shift] != (isa.Instruction{Op: isa.OpDead}) {
						t.Errorf("%s %s noInline=%v: xlated %d is %v, want dead", c.name, e, noInline, pc+shift, x[pc+shift])
					}
				}
				b := x[c.branch]
				if c.branch > 4 {
					b = x[c.branch+shift]
				}
				if c.wired != (b == isa.Instruction{Op: isa.OpJA}) {
					t.Errorf("%s %s noInline=%v: branch is %v, hard-wired %v", c.name, e, noInline, b, !c.wired)
				}
				r, _, err := p.Test(make([]byte, 64))
				if err != nil || r != 42 {
					t.Errorf("%s %s noInline=%v: run %d, %v; want 42", c.name, e, noInline, r, err)
				}
				var v uint64
				if err := ms[1].Lookup(uint32(0), &v); err != nil || v != 0 {
					t.Errorf("%s %s: the read-only map holds %d, %v", c.name, e, v, err)
				}
			}
		}
	}
}

// A write to R10 and junk in reserved fields are refused on the paths the
// verifier explores only, as in the kernel; in code it never reaches they
// load, and never run (the instruction is dead). Programs that are not
// verified (NoVerify, or a type without verifier rules) are refused at
// load: the engines never run such an instruction.
func TestDeadFramePointerWrite(t *testing.T) {
	dead, err := isa.Assemble("r0 = 3\nif r0 == 3 goto out\nr10 = 0\nr0 = *(u64 *)(r10 -8)\nout: exit")
	if err != nil {
		t.Fatal(err)
	}
	live, err := isa.Assemble("r10 = 0\nr0 = 0\nexit")
	if err != nil {
		t.Fatal(err)
	}
	// A store whose reserved imm is set, in dead code.
	reserved := append([]isa.Instruction(nil), dead...)
	reserved[2] = isa.Instruction{Op: isa.ClassSTX | isa.ModeMEM | isa.SizeDW, Dst: isa.R10, Src: isa.R0, Off: -8, Imm: 5}
	const fp, stx = "frame pointer is read only", "BPF_STX uses reserved fields"
	cpus := runner.NewCPUs(1)
	defer cpus.Close()
	for _, e := range []Engine{EngineInterpreter, EngineJIT} {
		for _, c := range []struct {
			name  string
			typ   ebpf.ProgramType
			insns []isa.Instruction
			opts  ProgramOptions
			err   string // "" loads
		}{
			{"dead verified", ebpf.XDP, dead, ProgramOptions{}, ""},
			{"dead verified unprivileged", ebpf.XDP, dead, ProgramOptions{Unprivileged: true}, ""},
			{"dead verified no inlining", ebpf.XDP, dead, ProgramOptions{NoInline: true}, ""},
			{"dead unverified", ebpf.XDP, dead, ProgramOptions{NoVerify: true}, fp},
			{"dead untyped", ebpf.UnspecifiedProgram, dead, ProgramOptions{}, fp},
			{"live verified", ebpf.XDP, live, ProgramOptions{}, fp},
			{"live unverified", ebpf.XDP, live, ProgramOptions{NoVerify: true}, fp},
			{"dead reserved verified", ebpf.XDP, reserved, ProgramOptions{}, ""},
			{"dead reserved unverified", ebpf.XDP, reserved, ProgramOptions{NoVerify: true}, stx},
		} {
			c.opts.Engine = e
			p, err := newProgram("fp", c.typ, c.insns, nil, cpus, c.opts)
			if c.err != "" {
				if err == nil {
					p.Close()
					t.Errorf("%s %s: loaded", c.name, e)
				} else if !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s %s: %v, want %s", c.name, e, err, c.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", c.name, e, err)
				continue
			}
			at := 2
			if c.opts.Unprivileged {
				// The mispredicted fall-through writes R10: a
				// speculation barrier guards it (rewrite.Spectre).
				if x := p.XlatedInstructions()[at]; x != (isa.Instruction{Op: isa.OpNospec}) {
					t.Errorf("%s %s: xlated 2 is %v, want nospec", c.name, e, x)
				}
				at++
			}
			if x := p.XlatedInstructions()[at]; x != (isa.Instruction{Op: isa.OpDead}) {
				t.Errorf("%s %s: xlated %d is %v, want dead", c.name, e, at, x)
			}
			if r, _, err := p.Test(make([]byte, 64)); err != nil || r != 3 {
				t.Errorf("%s %s: run %d, %v; want 3", c.name, e, r, err)
			}
			p.Close()
		}
	}
}
