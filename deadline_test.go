package bpfvm_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

// deadlineShapes are programs that run until their context stops them,
// each spending its time differently: they cover what a slice of work
// between two looks at the context can be made of. Map loads name their
// map by fd: 0 is "big", a 16 MiB array, 1 is "jmp", a program array
// holding the program itself.
var deadlineShapes = []struct{ name, body string }{
	{"alu", "r7 += 1\nr7 ^= 0x55\nr7 *= 3"},
	{"stack memory", "*(u64 *)(r10 -8) = r7\nr8 = *(u64 *)(r10 -8)\n*(u64 *)(r10 -16) = r8\nr7 = *(u64 *)(r10 -16)\nr7 += 1"},
	// Random 4 KiB values of a 16 MiB map: a cache miss each round.
	{"map memory", "call bpf_get_prandom_u32#7\nr0 &= 4095\n*(u32 *)(r10 -4) = r0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\n" +
		"call bpf_map_lookup_elem#1\nif r0 == 0 goto l\nr1 = *(u64 *)(r0 +0)\nr1 += 1\n*(u64 *)(r0 +2048) = r1"},
	{"helper calls", "call bpf_ktime_get_ns#5\nr7 += r0\ncall bpf_ktime_get_ns#5\nr7 ^= r0"},
	// 2^23 rounds of bpf_loop per call: one call outlasts the deadline.
	{"bpf_loop", "r1 = 0x800000\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181"},
	// Short bpf_loop calls: the callbacks' own runs are the slices.
	{"bpf_loop short", "r1 = 64\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181"},
	{"nested calls", "r1 = r7\ncall f\nr7 += r0"},
	// Each link of the chain runs bpf_loop, then tail-calls itself: 34
	// runs, none long enough to reach a check of its own chunk.
	{"tail calls", "r1 = 30000\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr1 = r6\nr2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12"},
}

// deadlineProgram wraps a shape's body in a may_goto loop (timed, with a
// budget far beyond the test's deadline) and its functions.
func deadlineProgram(body string) string {
	src := "r6 = r1\nr7 = 0\nl: may_goto out\n" + body + "\ngoto l\nout: r0 = 0\nexit\n"
	if strings.Contains(body, "subprog[cb]") {
		src += "cb: r0 = 0\nexit\n"
	}
	if strings.Contains(body, "call f") {
		src += "f: r0 = r1\ncall g\nr0 += 1\nexit\ng: r0 = 2\nr0 += 3\nexit\n"
	}
	return src
}

// deadlineSpec is a collection of one shape, "prog", with its maps.
func deadlineSpec(t testing.TB, body string) *ebpf.CollectionSpec {
	t.Helper()
	insns, err := isa.Assemble(deadlineProgram(body))
	if err != nil {
		t.Fatal(err)
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"big", "jmp"}
	for i := range kinsns {
		if kinsns[i].IsLoadFromMap() {
			kinsns[i] = kinsns[i].WithReference(names[kinsns[i].Constant&0xffffffff])
		}
	}
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"big": {Name: "big", Type: ebpf.Array, KeySize: 4, ValueSize: 4096, MaxEntries: 4096},
			"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"prog": {Name: "prog", Type: ebpf.SchedCLS, Instructions: kinsns, License: "GPL"},
		},
	}
}

// TestDeadline checks that a run with a 1 ms deadline returns soon after
// it, whatever the program spends its time on, on both engines, verified
// (unchecked) and unverified (checked). A loaded machine can deschedule
// any run for milliseconds, so the figure is the median of a batch of
// runs, and a batch over the bound is measured again, up to maxBatches:
// noise comes and goes, while a slice of work too long for its deadline
// shows in every batch (with fixed chunks of 2^20 the median was 2 to
// 29 ms on the JIT in nine of these cases).
func TestDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	const (
		deadline   = time.Millisecond
		runs       = 7 // a batch
		maxBatches = 8
		bound      = time.Millisecond // overshoot of a batch's median
	)
	var worst, worstBest, worstMax time.Duration
	worstName := ""
	for _, shape := range deadlineShapes {
		spec := deadlineSpec(t, shape.body)
		for _, engine := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			for _, noVerify := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/verified", shape.name, engine)
				if noVerify {
					name = fmt.Sprintf("%s/%s/checked", shape.name, engine)
				}
				t.Run(name, func(t *testing.T) {
					c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{
						Engine: engine, NoVerify: noVerify, MayGotoBudget: 10 * time.Minute,
					}})
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					p := c.Programs["prog"]
					if err := c.Maps["jmp"].Put(uint32(0), p); err != nil {
						t.Fatal(err)
					}
					var over []time.Duration
					med := time.Duration(math.MaxInt64)
					batches := 0
					for ; batches < maxBatches && med > bound; batches++ {
						over = over[:0]
						for i := range runs {
							// The clock first: a deschedule between the two
							// would otherwise count against the deadline.
							start := time.Now()
							ctx, cancel := context.WithTimeout(context.Background(), deadline)
							_, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 64), RunContext: ctx})
							d := time.Since(start) - deadline
							cancel()
							if shape.name == "tail calls" && err == nil {
								d = 0 // the chain may end before the deadline
							} else if !errors.Is(err, context.DeadlineExceeded) {
								t.Fatalf("run %d: %v, want context.DeadlineExceeded", i, err)
							}
							over = append(over, d)
						}
						slices.Sort(over)
						med = over[len(over)/2]
					}
					t.Logf("overshoot of a 1 ms deadline: median %v, best %v, worst %v (batch %d)", med, over[0], over[len(over)-1], batches)
					if med > worst {
						worst, worstName = med, name
					}
					worstBest, worstMax = max(worstBest, over[0]), max(worstMax, over[len(over)-1])
					if med > bound {
						t.Errorf("returned %v after a 1 ms deadline (median of %d runs, in each of %d batches), want at most %v", med, runs, batches, bound)
					}
				})
			}
		}
	}
	if os.Getenv("BPFVM_DEADLINE_REPORT") != "" || testing.Verbose() {
		t.Logf("worst median overshoot: %v (%s); worst best run %v, worst run %v", worst, worstName, worstBest, worstMax)
	}
}
