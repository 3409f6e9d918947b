package bpfvm_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// The verifier scale corpus: testdata/scale/*.o (see its README.md for the
// programs and the figures measured on Linux 6.18). Each object holds one
// program with a known verdict, which bpfvm's verifier must reproduce and
// which the running kernel is checked against where bpf() is permitted.
//
// A program bpfvm's verifier cannot handle within the test budget, or
// rejects where the kernel accepts, can be marked heavy: its bpfvm
// assertion then runs only with BPFVM_SCALE=1. None is at the moment (before
// static liveness and state eviction, scale3 was rejected at 1,000,001
// processed instructions and path_explosion ran for more than 45 minutes).
// BPFVM_SCALE_TIMEOUT, a Go duration, bounds each verification (default
// 2m). -short skips the programs near a million processed instructions and
// the kernel loads.
type scaleCase struct {
	file, prog string
	accept     bool
	// reject is a substring of the expected rejection.
	reject string
	// processed, when not zero, is the exact count both verifiers reach,
	// and states and peak the states remembered in all and at once (the
	// kernel's total_states and peak_states, Linux 6.18).
	processed, states, peak int
	// big programs take about a second each; -short skips them.
	big bool
	// heavy explains why the bpfvm assertion needs BPFVM_SCALE=1.
	heavy string
}

var scaleCases = []scaleCase{
	{file: "scale1.o", prog: "scale1_noinline14", accept: true, processed: 647_265, states: 8_636, peak: 2_146, big: true},
	{file: "scale2.o", prog: "scale2_inline14", accept: true, processed: 935_238, states: 3_048, peak: 801, big: true},
	{file: "scale3.o", prog: "scale3_noinline32", accept: true, processed: 991_245, states: 8_636, peak: 2_146, big: true},
	{file: "straight_line.o", prog: "straight_line", accept: true, processed: 1_000_000, big: true},
	{file: "path_explosion.o", prog: "path_explosion", reject: "BPF program is too large. Processed 1000001 insn", processed: 1_000_001, states: 105_264, peak: 72, big: true},
	{file: "lb_tc.o", prog: "lb_ingress", accept: true, processed: 453, states: 29, peak: 29},
	{file: "xdp_ddos.o", prog: "ddos_filter", accept: true, processed: 1_194, states: 105, peak: 97},
	// bpfvm processes 247 instructions and remembers 19 states, the
	// kernel 266 and 20 (TestCorpusVerdicts-style: at most the kernel's).
	{file: "sock_filter.o", prog: "sock_filter", accept: true},
	{file: "multi_call.o", prog: "multi_call", accept: true, processed: 432, states: 35, peak: 35},
}

// scaleStats are the figures of one verification, from either verifier's
// statistics log (log level 4): "verification time N usec" and
// "processed N insns (limit 1000000) max_states_per_insn N total_states N
// peak_states N mark_read N".
type scaleStats struct {
	micros, processed, maxPerInsn, total, peak int
}

var (
	scaleTimeRE  = regexp.MustCompile(`verification time (\d+) usec`)
	scaleStatsRE = regexp.MustCompile(`processed (\d+) insns \(limit \d+\) max_states_per_insn (\d+) total_states (\d+) peak_states (\d+)`)
)

func parseScaleStats(log string) (s scaleStats, ok bool) {
	m := scaleStatsRE.FindStringSubmatch(log)
	if m == nil {
		return s, false
	}
	s.processed, _ = strconv.Atoi(m[1])
	s.maxPerInsn, _ = strconv.Atoi(m[2])
	s.total, _ = strconv.Atoi(m[3])
	s.peak, _ = strconv.Atoi(m[4])
	if m := scaleTimeRE.FindStringSubmatch(log); m != nil {
		s.micros, _ = strconv.Atoi(m[1])
	}
	return s, true
}

func (s scaleStats) String() string {
	return fmt.Sprintf("processed %d insns, max_states_per_insn %d, total_states %d, peak_states %d, %v",
		s.processed, s.maxPerInsn, s.total, s.peak, time.Duration(s.micros)*time.Microsecond)
}

func TestScaleVerdicts(t *testing.T) {
	enabled := os.Getenv("BPFVM_SCALE") == "1"
	budget := 2 * time.Minute
	if v := os.Getenv("BPFVM_SCALE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("BPFVM_SCALE_TIMEOUT: %v", err)
		}
		budget = d
	}
	for _, c := range scaleCases {
		t.Run(strings.TrimSuffix(c.file, ".o"), func(t *testing.T) {
			if c.big && testing.Short() {
				t.Skip("near 1M processed instructions: skipped in -short mode")
			}
			file := filepath.Join("testdata", "scale", c.file)
			t.Run("bpfvm", func(t *testing.T) {
				if c.heavy != "" && !enabled {
					t.Skipf("known problem, set BPFVM_SCALE=1 to check: %s", c.heavy)
				}
				scaleCheckBpfvm(t, c, file, budget)
			})
			t.Run("kernel", func(t *testing.T) {
				if testing.Short() {
					t.Skip("kernel loads skipped in -short mode")
				}
				scaleCheckKernel(t, c, file)
			})
		})
	}
}

// scaleCheckBpfvm verifies the program with bpfvm. It loads the object as
// bpfvm.LoadCollection does, with the statistics log on so that a rejection
// reports its figures too. A verification that outlives budget fails the
// test and is left running until the test binary exits (the verifier cannot
// be cancelled).
func scaleCheckBpfvm(t *testing.T, c scaleCase, file string, budget time.Duration) {
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		coll *bpfvm.Collection
		err  error
		wall time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{
			Programs: bpfvm.ProgramOptions{LogLevel: 4},
		})
		done <- result{coll, err, time.Since(start)}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(budget):
		t.Fatalf("bpfvm: verification did not finish within %v", budget)
	}

	var log string
	var ve *bpfvm.VerifierError
	switch {
	case r.err == nil:
		defer r.coll.Close()
		p := r.coll.Programs[c.prog]
		if p == nil {
			t.Fatalf("no program %s in %s", c.prog, file)
		}
		log = p.VerifierLog
	case errors.As(r.err, &ve):
		log = strings.Join(ve.Log, "\n")
	default:
		t.Fatalf("bpfvm load: %v", r.err)
	}
	verdict := "accepted"
	if r.err != nil {
		verdict = "rejected"
	}
	st, ok := parseScaleStats(log)
	if !ok {
		t.Errorf("no statistics in the bpfvm log:\n%s", log)
	}
	t.Logf("bpfvm: %s in %v: %v", verdict, r.wall.Round(time.Millisecond), st)

	switch {
	case c.accept && r.err != nil:
		t.Errorf("bpfvm rejected the program: %v", r.err)
	case !c.accept && r.err == nil:
		t.Errorf("bpfvm accepted the program; want a rejection containing %q", c.reject)
	case !c.accept && !strings.Contains(r.err.Error(), c.reject):
		t.Errorf("bpfvm: %v; want a rejection containing %q", r.err, c.reject)
	}
	scaleCheckFigures(t, "bpfvm", c, st, ok)
}

// scaleCheckFigures checks one verifier's figures against the case's.
func scaleCheckFigures(t *testing.T, who string, c scaleCase, st scaleStats, ok bool) {
	t.Helper()
	if c.processed == 0 || !ok {
		return
	}
	if st.processed != c.processed {
		t.Errorf("%s processed %d instructions, want %d", who, st.processed, c.processed)
	}
	if st.total != c.states || st.peak != c.peak {
		t.Errorf("%s remembered %d states, %d at the peak; want %d and %d", who, st.total, st.peak, c.states, c.peak)
	}
}

// scaleCheckKernel loads the program into the running kernel, where bpf()
// is permitted, and checks the expected verdict: the corpus is right about
// the kernel.
func scaleCheckKernel(t *testing.T, c scaleCase, file string) {
	if os.Getuid() != 0 {
		t.Skip("kernel oracle skipped: not root")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("kernel oracle skipped: %v", err)
	}
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats},
	})
	wall := time.Since(start)
	var log string
	var ve *ebpf.VerifierError
	switch {
	case err == nil:
		defer coll.Close()
		log = coll.Programs[c.prog].VerifierLog
	case errors.As(err, &ve):
		log = strings.Join(ve.Log, "\n")
	case errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported):
		t.Skipf("kernel oracle skipped: %v", err)
	default:
		t.Fatalf("kernel load: %v", err)
	}
	verdict := "accepted"
	if err != nil {
		verdict = "rejected"
	}
	st, ok := parseScaleStats(log)
	t.Logf("kernel: %s in %v: %v", verdict, wall.Round(time.Millisecond), st)
	switch {
	case c.accept && err != nil:
		t.Errorf("the kernel rejected the program: %v", err)
	case !c.accept && err == nil:
		t.Errorf("the kernel accepted the program; want a rejection containing %q", c.reject)
	case !c.accept && !strings.Contains(log, c.reject):
		t.Errorf("kernel: %v; want a rejection containing %q", err, c.reject)
	}
	scaleCheckFigures(t, "the kernel", c, st, ok)
}

// BenchmarkVerifyScale loads (and so verifies) each accepted program of
// the scale corpus, for profiling the verifier:
// go test -run XXX -bench VerifyScale/scale1 -cpuprofile cpu.out
func BenchmarkVerifyScale(b *testing.B) {
	for _, c := range scaleCases {
		if !c.accept {
			continue
		}
		b.Run(strings.TrimSuffix(c.file, ".o"), func(b *testing.B) {
			spec, err := loader.LoadCollectionSpec(filepath.Join("testdata", "scale", c.file))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				coll, err := bpfvm.NewCollection(spec)
				if err != nil {
					b.Fatal(err)
				}
				coll.Close()
			}
		})
	}
}

// BenchmarkVerifyScaleReject verifies the programs of the corpus that the
// complexity limit rejects.
func BenchmarkVerifyScaleReject(b *testing.B) {
	for _, c := range scaleCases {
		if c.accept {
			continue
		}
		b.Run(strings.TrimSuffix(c.file, ".o"), func(b *testing.B) {
			spec, err := loader.LoadCollectionSpec(filepath.Join("testdata", "scale", c.file))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := bpfvm.NewCollection(spec); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
