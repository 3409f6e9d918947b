package bpfvm

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/runner"
)

// TestSpectreRuns loads unprivileged programs whose verification asked
// for Spectre mitigations (verifier/spectre.go) on both engines: the
// rewrite puts in the barriers and the masked pointer arithmetic
// (rewrite.Spectre), and the programs run in checked mode, the default
// of unprivileged loads, with the results the unmasked code would give.
func TestSpectreRuns(t *testing.T) {
	const lookup = "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\n"
	const out = "\nexit\nout: r0 = 0\nexit"
	for _, c := range []struct {
		name             string
		asm              string
		want             uint32
		barriers, masked int
	}{
		{"variable offset", lookup + "r1 = *(u32 *)(r0 +0)\nr1 &= 31\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, 105, 1, 1},
		{"offset in dst", lookup + "r1 = *(u32 *)(r0 +0)\nr1 &= 31\nr1 += r0\nr0 = *(u8 *)(r1 +0)" + out, 105, 1, 1},
		{"constant register", lookup + "r1 = 9\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, 109, 1, 1},
		{"negative constant register", lookup + "r1 = -8\nr0 += 16\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, 108, 1, 1},
		{"subtracted constant register", lookup + "r1 = 6\nr0 += 16\nr0 -= r1\nr0 = *(u8 *)(r0 +0)" + out, 110, 1, 1},
		{"stack", "r1 = -8\nr2 = r10\nr2 += r1\n*(u64 *)(r2 +0) = 7\nr0 = *(u64 *)(r10 -8)\nexit", 7, 1, 1},
		{"known branch", "r0 = 3\nif r0 == 3 goto +1\nr0 = *(u64 *)(r10 -8)\nexit", 3, 1, 0},
		{"known branch, helper not allowed", "r0 = 4\nif r0 == 4 goto +1\ncall bpf_trace_printk#6\nexit", 4, 1, 0},
		{"store over a spilled pointer", "*(u64 *)(r10 -8) = r1\n*(u64 *)(r10 -8) = 0\nr0 = *(u64 *)(r10 -8)\nexit", 0, 2, 0},
		{"speculative helper writing the stack", "r6 = r1\nr0 = 0\nif r0 == 0 goto +8\nr1 = r6\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_skb_load_bytes#26\nr0 = *(u64 *)(r10 -16)\nexit\nr0 = 6\nexit", 6, 0, 0},
		{"pointer spill", "*(u64 *)(r10 -8) = r1\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", 50, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.asm)
			if err != nil {
				t.Fatal(err)
			}
			cpus := runner.NewCPUs(1)
			defer cpus.Close()
			m, err := newMap(&ebpf.MapSpec{Name: "val48", Type: ebpf.Array, KeySize: 4, ValueSize: 48, MaxEntries: 1}, cpus)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var v [48]byte
			for i := range v {
				v[i] = byte(100 + i)
			}
			v[0], v[1], v[2], v[3] = 5, 0, 0, 0
			if err := m.Put(uint32(0), v[:]); err != nil {
				t.Fatal(err)
			}
			for _, e := range []Engine{EngineInterpreter, EngineJIT} {
				p, err := newProgram("spectre", ebpf.SocketFilter, insns, []*Map{m}, cpus, ProgramOptions{Engine: e, Unprivileged: true})
				if err != nil {
					t.Fatalf("%s: %v", e, err)
				}
				defer p.Close()
				if !p.Checked() {
					t.Errorf("%s: not checked", e)
				}
				var barriers, masked int
				for _, ins := range p.XlatedInstructions() {
					switch ins.Op {
					case isa.OpNospec:
						barriers++
					case isa.OpMaskedALU:
						masked++
					}
				}
				if barriers != c.barriers || masked != c.masked {
					t.Errorf("%s: %d barriers, %d masked; want %d, %d", e, barriers, masked, c.barriers, c.masked)
				}
				r, _, err := p.Test(make([]byte, 64))
				if err != nil || r != c.want {
					t.Errorf("%s: run %d, %v; want %d", e, r, err, c.want)
				}
			}
		})
	}
}
