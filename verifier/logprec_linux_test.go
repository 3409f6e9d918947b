package verifier_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// stateLine matches the level-2 lines that carry register state: an
// instruction with the registers it touched after "; ", or a state of
// its own ("N: R1=..."), or a branch popped ("from N to M: ...").
var stateLine = regexp.MustCompile(`^(?:\d+: \(.*?;\s+|\d+: |(from \d+ to \d+: ))([Rf].*)$`)

var logPrecCompared, logPrecSame, logPrecPrecise atomic.Int64

// stateLines are a log's state lines, with the alignment spaces squeezed.
func stateLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		// Only the state: the kernel gives it a line of its own, numbered
		// with the next instruction, when mark_precise lines came
		// between, where ours stays on the instruction's line.
		if m := stateLine.FindStringSubmatch(l); m != nil {
			out = append(out, m[1]+m[2])
		}
	}
	return out
}

// TestLogPreciseMarksKernel compares the level-2 state lines of programs
// whose scalars get marked precise (helper sizes, pointer arithmetic,
// spilled constants, return values) or linked by ids with the running
// kernel's: the "P" mark, scalar ids, and no write marks (6.18 prints
// none).
func TestLogPreciseMarksKernel(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root for bpf()")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		t.Logf("log states: %d of %d as the kernel's, %d of them with precise marks", logPrecSame.Load(), logPrecCompared.Load(), logPrecPrecise.Load())
	})
	for _, tc := range []struct {
		name string
		typ  *progtype.Type
		ktyp ebpf.ProgramType
		src  string
		// known are states ours differ from the kernel's in: the stack a
		// helper wrote shows after the call in the kernel's; a call whose
		// size argument was backtracked gets its state printed only at
		// the next instruction there, so not when that one is pruned;
		// the kernel leaves a linked copy dead at the branch target
		// unrefined.
		known []string
	}{
		{"helper size", progtype.SocketFilter, ebpf.SocketFilter, `
			r6 = r1
			r7 = 8
			r1 = r6
			r2 = 0
			r3 = r10
			r3 += -8
			r4 = r7
			call 26
			r0 = r7
			exit`, []string{"R0=scalar() fp-8=mmmmmmmm"}},
		{"spilled size", progtype.SocketFilter, ebpf.SocketFilter, `
			r6 = r1
			r1 = 4
			*(u64 *)(r10 -8) = r1
			r4 = *(u64 *)(r10 -8)
			r1 = r6
			r2 = 0
			r3 = r10
			r3 += -16
			call 26
			r0 = *(u64 *)(r10 -8)
			exit`, []string{"R0=scalar() fp-16=????mmmm"}},
		{"linked ids", progtype.SocketFilter, ebpf.SocketFilter, `
			call 7
			r1 = r0
			r2 = r0
			if r1 > 7 goto out
			r3 = r10
			r3 += -8
			r3 += r2
			r0 = r2
			r0 = 0
			exit
		out:
			r0 = r1
			r0 = 0
			exit`, []string{"from 3 to 10: R0=scalar(id=1) R1=scalar(id=1,umin=8) R2=scalar(id=1,umin=8) R10=fp0", "R0=scalar(id=1) R1=scalar(id=1,umin=8) R2=scalar(id=1,umin=8) R10=fp0"}},
		{"precise after branch", progtype.SocketFilter, ebpf.SocketFilter, `
			r8 = r1
			call 7
			r6 = r0
			r6 &= 3
			r7 = 4
			if r0 == 1 goto l1
			r0 = 0
		l1:
			r1 = r10
			r1 += -8
			r1 += r6
			r0 = r6
			r4 = r7
			r1 = r8
			r2 = 0
			r3 = r10
			r3 += -16
			call 26
			r0 = r7
			r0 = 0
			exit`, []string{"R0=scalar() fp-16=????mmmm"}},
		{"spill precise after branch", progtype.SocketFilter, ebpf.SocketFilter, `
			r6 = r1
			call 7
			r1 = 4
			*(u64 *)(r10 -8) = r1
			if r0 == 1 goto l1
			r0 = 0
		l1:
			r4 = *(u64 *)(r10 -8)
			r1 = r6
			r2 = 0
			r3 = r10
			r3 += -16
			call 26
			r0 = *(u64 *)(r10 -8)
			r0 = 0
			exit`, []string{"R0=scalar() fp-16=????mmmm", "R0=scalar()"}},
		{"branch known", progtype.SocketFilter, ebpf.SocketFilter, `
			call 7
			r6 = r0
			r6 &= 3
			r7 = 2
			if r7 > 5 goto out
			r1 = r10
			r1 += -8
			r1 += r6
			r0 = r6
			r0 = r7
		out:
			r0 = 0
			exit`, nil},
		{"return range", progtype.CGroupSKBIngress, ebpf.CGroupSKB, `
			call 7
			r6 = r0
			r6 &= 1
			r0 = r6
			if r6 == 0 goto out
			r0 = 1
		out:
			r1 = r0
			exit`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insns, err := isa.Assemble(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			res, err := verifier.Verify(insns, verifier.Options{Type: tc.typ, LogLevel: 2})
			if err != nil {
				t.Fatalf("bpfvm: %v\n%s", err, res.Log)
			}
			kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
			if err != nil {
				t.Fatal(err)
			}
			spec := &ebpf.ProgramSpec{Type: tc.ktyp, Instructions: kinsns, License: "GPL"}
			if tc.ktyp == ebpf.CGroupSKB {
				spec.AttachType = ebpf.AttachCGroupInetIngress
			}
			p, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction, LogSizeStart: 1 << 20})
			if errors.Is(err, os.ErrPermission) {
				t.Skip("bpf() not permitted")
			}
			if err != nil {
				t.Fatalf("kernel: %v", err)
			}
			klog := p.VerifierLog
			if os.Getenv("LOGPREC_DUMP") != "" {
				t.Logf("kernel:\n%s\nbpfvm:\n%s", klog, res.Log)
			}
			p.Close()
			want, got := stateLines(klog), stateLines(res.Log)
			same, precise, known := 0, 0, 0
			for i := range max(len(want), len(got)) {
				switch {
				case i < len(want) && i < len(got) && want[i] == got[i]:
					same++
					if strings.Contains(got[i], "=P") {
						precise++
					}
				case i < len(want) && slices.Contains(tc.known, want[i]),
					i >= len(want) && slices.Contains(tc.known, got[i]):
					known++
				case i < len(want) && i < len(got):
					t.Errorf("state %d: %q, kernel %q", i, got[i], want[i])
				case i < len(want):
					t.Errorf("state %d: missing, kernel %q", i, want[i])
				default:
					t.Errorf("state %d: %q, kernel has none", i, got[i])
				}
			}
			logPrecCompared.Add(int64(len(want)))
			logPrecSame.Add(int64(same))
			logPrecPrecise.Add(int64(precise))
			t.Logf("%d of %d states as the kernel's (%d with precise marks), %d known differences", same, len(want), precise, known)
		})
	}
}
