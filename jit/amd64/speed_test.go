//go:build amd64 && linux

package amd64

import (
	"os"
	"testing"
	"time"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// TestSpeedReport prints robust speed figures on a busy machine: the best of
// many timings of each program, JIT against interpreter in one process.
// Run with JIT_SPEED=1 go test -run TestSpeedReport -v ./jit/amd64.
func TestSpeedReport(t *testing.T) {
	if os.Getenv("JIT_SPEED") == "" {
		t.Skip("set JIT_SPEED=1 to measure")
	}
	best := func(e engine, te *testEnv) time.Duration {
		d := time.Hour
		for range 3000 {
			s := time.Now()
			e.Run(te.env, te.addr, uint64(te.size), 0)
			d = min(d, time.Since(s))
		}
		return d
	}
	helpers := func(id int32) vm.Helper {
		return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) { return r1, nil }
	}
	compile := func(src string) (*Program, *interp.Program) {
		prog, err := isa.Assemble(src)
		if err != nil {
			t.Fatal(err)
		}
		jp, err := Compile(prog, helpers, Options{Modes: Checked | Unchecked})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { jp.Close() })
		ip, err := interp.New(prog, helpers)
		if err != nil {
			t.Fatal(err)
		}
		return jp, ip
	}
	call := `
		r6 = 1000
	l:
		r1 = r6
		call 1
		r6 += -1
		if r6 != 0 goto l
		exit`
	noCall := `
		r6 = 1000
	l:
		r1 = r6
		r0 = r1
		r6 += -1
		if r6 != 0 goto l
		exit`
	for _, checked := range []bool{false, true} {
		te := newEnv(t, checked, 1024)
		te.size = 0
		jc, ic := compile(call)
		jn, in := compile(noCall)
		rt := func(c, n engine) float64 { return float64(best(c, te)-best(n, te)) / 1000 }
		t.Logf("checked=%v helper round trip: jit %.2f ns, interp %.2f ns", checked, rt(jc, jn), rt(ic, in))
		for _, b := range []struct {
			name string
			src  string
			size int
		}{{"alu loop", aluLoop, 0}, {"mem hash 1K", memHash, 1024}, {"stack loop", stackLoop, 0}, {"empty run", "r0 = 0\nexit", 0}} {
			te.size = b.size
			jp, ip := compile(b.src)
			j, i := best(jp, te), best(ip, te)
			t.Logf("checked=%v %-12s jit %9v interp %9v ratio %5.1fx", checked, b.name, j, i, float64(i)/float64(j))
		}
	}
}

// TestCallSpeedReport prints the cost of a native routine call in each
// form, best of many timings. Run with JIT_SPEED=1.
func TestCallSpeedReport(t *testing.T) {
	if os.Getenv("JIT_SPEED") == "" {
		t.Skip("set JIT_SPEED=1 to measure")
	}
	src := ""
	for range 1000 {
		src += "call 8\n"
	}
	src += "exit"
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	te := newEnv(t, false, 0)
	var rng vm.Rand
	te.env.Rand = &rng
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"near", Options{}}, {"far", Options{Far: true}}, {"far retpoline", Options{Far: true, Retpoline: true}},
		{"go exit", Options{}},
	} {
		c.opts.Modes = Unchecked
		if c.name != "go exit" {
			c.opts.Natives = testNatives
		}
		p, err := Compile(prog, goHelpers, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		d := time.Hour
		for range 2000 {
			s := time.Now()
			p.Run(te.env, 0, 0, 0)
			d = min(d, time.Since(s))
		}
		t.Logf("%-14s %+v: %.2f ns/call", c.name, p.Info(false), float64(d)/1000)
		p.Close()
	}
}
