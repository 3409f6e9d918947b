package verifier_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// stateFigures are a verification's instructions processed and states
// remembered, in all and at once.
type stateFigures struct{ processed, total, peak int }

// TestStateFiguresAsKernel checks that bpfvm remembers as many states as
// the kernel (is_state_visited's heuristics) on loops, where they matter
// most, with and without BPF_F_TEST_STATE_FREQ: the figures the kernel
// (Linux 6.18) reached, and the running kernel's where bpf() is permitted.
func TestStateFiguresAsKernel(t *testing.T) {
	for _, c := range []struct {
		name  string
		asm   string
		flags uint32
		want  stateFigures
		err   string
	}{
		// FuzzVerifierGarbage's slow seed (testdata/fuzz): a loop in a
		// callee that runs into the limit. A state every 2 jumps and 8
		// instructions in the loop made 222,222 of them (3.4 s); the
		// kernel remembers one every 20 jumps there.
		{name: "loop to the limit in a callee", asm: "call f\nexit\nf: r0 = 0\nl: r0 += 1\nif r0 < 0x1000005 goto l\nexit",
			want: stateFigures{1_000_001, 25_001, 25_001}, err: "BPF program is too large"},
		{name: "bounded loop", asm: "r0 = 0\nl: r0 += 1\nif r0 < 100 goto l\nr0 = 0\nexit",
			want: stateFigures{203, 6, 6}},
		{name: "bounded loop, a state at every prune point", flags: verifier.FlagTestStateFreq, asm: "r0 = 0\nl: r0 += 1\nif r0 < 100 goto l\nr0 = 0\nexit",
			want: stateFigures{203, 200, 200}},
		{name: "branches in a callee called twice", asm: "r1 = 1\ncall f\nr1 = 2\ncall f\nexit\nf: r0 = 0\nif r1 > 1 goto a\nr0 += 1\na: if r1 > 2 goto b\nr0 += 2\nb: r0 += 3\nexit",
			want: stateFigures{18, 2, 2}},
		{name: "branches in a callee called twice, a state at every prune point", flags: verifier.FlagTestStateFreq, asm: "r1 = 1\ncall f\nr1 = 2\ncall f\nexit\nf: r0 = 0\nif r1 > 1 goto a\nr0 += 1\na: if r1 > 2 goto b\nr0 += 2\nb: r0 += 3\nexit",
			want: stateFigures{18, 12, 12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.asm)
			if err != nil {
				t.Fatal(err)
			}
			res, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, Flags: c.flags, LogLevel: 4})
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("got %v, want an error with %q", err, c.err)
			}
			got := stateFigures{res.Stats.Processed, res.Stats.TotalStates, res.Stats.PeakStates}
			if got != c.want {
				t.Errorf("processed, total, peak states %v, want %v", got, c.want)
			}
			if testing.Short() {
				return
			}
			if k, ok := kernelStateFigures(t, insns, c.flags); ok {
				t.Logf("kernel: %v", k)
				if k != got {
					t.Errorf("processed, total, peak states %v, the kernel %v", got, k)
				}
			}
		})
	}
}

// kernelStateFigures loads an XDP program into the running kernel, where
// bpf() is permitted, and returns its statistics line's figures.
func kernelStateFigures(t *testing.T, insns []isa.Instruction, flags uint32) (stateFigures, bool) {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return stateFigures{}, false
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatal(err)
	}
	var log string
	p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Type: ebpf.XDP, Instructions: kinsns, License: "GPL", Flags: flags}, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats})
	var ve *ebpf.VerifierError
	switch {
	case err == nil:
		log = p.VerifierLog
		p.Close()
	case errors.As(err, &ve):
		log = strings.Join(ve.Log, "\n")
	default:
		t.Logf("kernel: %v", err)
		return stateFigures{}, false
	}
	var f stateFigures
	var limit, maxPer int
	for _, l := range strings.Split(log, "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "processed %d insns (limit %d) max_states_per_insn %d total_states %d peak_states %d", &f.processed, &limit, &maxPer, &f.total, &f.peak); err == nil {
			return f, true
		}
	}
	return stateFigures{}, false
}
