package bpfvm_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// deadFrameCases are programs that reach a stack frame that is not live
// (issue 11, class 3): the kernel's verifier rejects them, ours too, and
// checked mode stops them at the access on both engines.
var deadFrameCases = []struct{ name, asm string }{
	// f returns a pointer into its own frame; the caller writes through
	// it after the return.
	{"callee returns its stack", "call f\nr1 = 7\n*(u64 *)(r0 +0) = r1\nr0 = 0\nexit\n" +
		"f: r0 = r10\nr0 += -8\nexit"},
	// The same, read.
	{"callee returns its stack, read", "call f\nr0 = *(u64 *)(r0 +0)\nexit\n" +
		"f: r0 = r10\nr0 += -8\nexit"},
	// f spills a pointer into its own frame into the caller's frame
	// through the pointer it got; the caller writes through it.
	{"callee spills its stack into the caller's", "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\ncall f\n" +
		"r1 = *(u64 *)(r10 -8)\nr2 = 7\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit\n" +
		"f: r2 = r10\nr2 += -16\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit"},
	// The same, with the pointer one frame deeper: g's frame is dead
	// when f returns to main, as is f's.
	{"grand-callee spills its stack", "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\ncall f\n" +
		"r1 = *(u64 *)(r10 -8)\nr2 = 7\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit\n" +
		"f: call g\nr0 = 0\nexit\n" +
		"g: r2 = r10\nr2 += -32\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit"},
	// A bpf_loop callback spills a pointer into its frame into the
	// caller's, whose context argument it is; the caller writes through it
	// after bpf_loop returns.
	{"bpf_loop callback spills its stack", "*(u64 *)(r10 -8) = 0\nr1 = 1\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\n" +
		"r1 = *(u64 *)(r10 -8)\nr2 = 7\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit\n" +
		"cb: r3 = r10\nr3 += -8\n*(u64 *)(r2 +0) = r3\nr0 = 1\nexit"},
	// The same with a bpf_for_each_map_elem callback (over rw's one
	// element), whose context is its fourth argument.
	{"for_each callback spills its stack", "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_for_each_map_elem#164\n" +
		"r1 = *(u64 *)(r10 -8)\nr2 = 7\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit\n" +
		"cb: r3 = r10\nr3 += -16\n*(u64 *)(r4 +0) = r3\nr0 = 0\nexit"},
	// The frame below the current one, never entered: past the hidden
	// slots of the entry frame.
	{"below the frame", "r1 = r10\nr1 += -600\nr2 = 7\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit"},
	// The same reached in a subprogram through the caller's pointer.
	{"below the callee's frame", "r1 = r10\ncall f\nr0 = 0\nexit\n" +
		"f: r2 = 7\n*(u64 *)(r1 -1200) = r2\nr0 = 0\nexit"},
}

// Accesses to dead stack frames: a callee's after it returned (also a
// bpf_loop or for_each callback's), frames below the current one. Checked mode, which
// used to allow all frames at once, stops them with vm.ErrMemory on both
// engines; the verifier rejects them, as the kernel does.
func TestDeadStackFrames(t *testing.T) {
	for _, tc := range deadFrameCases {
		t.Run(tc.name, func(t *testing.T) {
			spec := asmSpec(t, frameMaps, map[string]string{"main": tc.asm})
			kernelRejects(t, spec)
			if _, err := bpfvm.NewCollection(spec); !errors.Is(err, verifier.ErrRejected) {
				t.Errorf("load: %v, want a verifier rejection", err)
			}
			for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
				c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoVerify: true, Engine: e}})
				if err != nil {
					t.Fatal(err)
				}
				_, _, err = c.Programs["main"].Test(make([]byte, 64))
				c.Close()
				if !errors.Is(err, vm.ErrMemory) {
					t.Errorf("engine %d, checked: %v, want %v", e, err, vm.ErrMemory)
				}
			}
		})
	}
}

// liveFrameModes are the modes the live-frame programs run in: checked
// (NoVerify) and verified with checks (defense in depth), on both engines.
var liveFrameModes = []bpfvm.ProgramOptions{
	{NoVerify: true, Engine: bpfvm.EngineInterpreter}, {NoVerify: true, Engine: bpfvm.EngineJIT},
	{Checks: bpfvm.ChecksOn, Engine: bpfvm.EngineInterpreter}, {Checks: bpfvm.ChecksOn, Engine: bpfvm.EngineJIT},
	{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT},
}

// deepChain returns a program of n frames: each function passes the
// entry frame's pointer (in r1) and its own frame's (in r2) down; the
// deepest adds 1 to both slots, each function on the way back adds its
// own slot (its depth plus 1, plus what the callee wrote there) to R0.
func deepChain(n int) string {
	var b strings.Builder
	b.WriteString("*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = r1\n")
	for d := 0; d < n; d++ {
		if d > 0 {
			fmt.Fprintf(&b, "f%d: r3 = %d\n*(u64 *)(r10 -8) = r3\nr6 = r2\nr2 = r10\nr2 += -8\n", d, d)
		} else {
			b.WriteString("r6 = r2\n")
		}
		if d < n-1 {
			fmt.Fprintf(&b, "call f%d\n", d+1)
		} else {
			// The deepest: the entry frame's slot and its caller's.
			b.WriteString("r3 = *(u64 *)(r1 +0)\nr3 += 1\n*(u64 *)(r1 +0) = r3\nr3 = *(u64 *)(r6 +0)\nr3 += 1\n*(u64 *)(r6 +0) = r3\nr0 = 0\n")
		}
		b.WriteString("r3 = *(u64 *)(r10 -8)\nr0 += r3\n")
		if d == 0 {
			b.WriteString("r0 *= 100\nr3 = *(u64 *)(r10 -8)\nr0 += r3\n")
		}
		b.WriteString("exit\n")
	}
	return b.String()
}

// Stack accesses to live frames keep working with checked frames: a callee
// writing its caller's stack through a pointer, an 8-frame chain writing
// the entry frame's, bpf_loop and for_each callbacks writing their caller's, in checked
// mode, verified with checks and verified, on both engines and as the
// kernel. (Tail calls from subprograms: TestTailCallFromSubprogram.)
func TestLiveStackFrames(t *testing.T) {
	cases := []struct {
		name, asm string
		want      uint32
	}{
		{"callee writes the caller's stack", "r1 = r10\nr1 += -8\ncall f\nr0 = *(u64 *)(r10 -8)\nexit\n" +
			"f: r2 = 42\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", 42},
		{"callee writes the caller's stack, one deeper", "r1 = r10\nr1 += -16\ncall f\nr0 = *(u64 *)(r10 -16)\nexit\n" +
			"f: *(u64 *)(r10 -8) = 1\ncall g\nr0 = *(u64 *)(r10 -8)\nexit\n" +
			"g: r2 = 43\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", 43},
		// 0+...+7 on the way back, plus 1 that the deepest added to its
		// caller's slot and 1 to the entry frame's, times 100, plus the
		// entry frame's slot again.
		{"8 frames", deepChain(8), (28+1+1)*100 + 1},
		{"bpf_loop callback writes the caller's stack", "*(u64 *)(r10 -8) = 0\nr1 = 5\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\n" +
			"r1 = *(u64 *)(r10 -8)\nr0 += r1\nexit\n" +
			"cb: r3 = *(u64 *)(r2 +0)\nr3 += 10\n*(u64 *)(r2 +0) = r3\n*(u64 *)(r10 -8) = r3\nr0 = 0\nexit", 55},
		{"for_each callback writes the caller's stack", "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_for_each_map_elem#164\n" +
			"r1 = *(u64 *)(r10 -8)\nr0 += r1\nexit\n" +
			"cb: r3 = *(u64 *)(r4 +0)\nr3 += 10\n*(u64 *)(r4 +0) = r3\n*(u64 *)(r10 -8) = r3\nr0 = 0\nexit", 11},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := asmSpec(t, frameMaps, map[string]string{"main": tc.asm})
			kern := kernelSpec(t, spec)
			for _, opts := range liveFrameModes {
				t.Run(fmt.Sprintf("noverify=%v checks=%v engine %d", opts.NoVerify, opts.Checks, opts.Engine), func(t *testing.T) {
					c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts})
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					checkRun(t, c, kern, "main", make([]byte, 64), nil, runOut{tc.want, nil})
				})
			}
		})
	}
}
