//go:build amd64 && linux

package amd64

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCallSaves checks that a bpf-to-bpf call preserves R6-R9 for the
// caller whatever the callee writes, also when the callee's control flow
// runs into code outside its function (unverified programs).
func TestCallSaves(t *testing.T) {
	const caller = `
		r6 = 6
		r7 = 7
		r8 = 8
		r9 = 9
		*(u64 *)(r10 - 8) = 0
		call f
		r6 *= 1000
		r7 *= 100
		r8 *= 10
		r0 = r6
		r0 += r7
		r0 += r8
		r0 += r9
		exit
	`
	for name, callee := range map[string]string{
		"none":    "f: r0 = 0\n exit",
		"r6":      "f: r6 = 1\n r0 = 0\n exit",
		"r7 r9":   "f: r7 = 1\n r9 = r7\n r0 = 0\n exit",
		"all":     "f: r6 = 1\n r7 = 2\n r8 = 3\n r9 = 4\n r0 = 0\n exit",
		"ldx":     "f: r8 = *(u64 *)(r10 - 8)\n r0 = 0\n exit",
		"imm64":   "f: r9 = 0x123456789 ll\n r0 = 0\n exit",
		"fetch":   "f: r7 = 5\n r7 = atomic64_fetch_add((u64 *)(r10 - 8), r7)\n r0 = 0\n exit",
		"branch":  "f: if r1 == 0 goto a\n r6 = 1\n a: r0 = 0\n exit",
		"loop":    "f: r1 = 3\n l: r8 += 1\n r1 += -1\n if r1 != 0 goto l\n r0 = 0\n exit",
		"nested":  "f: r6 = 1\n call g\n r0 = 0\n exit\n g: r7 = 2\n r0 = 0\n exit",
		"escapes": "f: goto out\n r0 = 0\n exit\n out: r9 = 1\n r8 = 2\n r0 = 0\n exit",
	} {
		t.Run(name, func(t *testing.T) {
			diff(t, diffCase{prog: mustAssemble(t, caller+callee)})
		})
	}
	// A callee that jumps back into its caller's code writes what that
	// code writes (checked mode: the verifier would reject it).
	prog := mustAssemble(t, `
		r6 = 6
		r7 = 7
		r1 = 0
	back:
		if r1 != 0 goto done
		r1 = 1
		call f
		r0 = r6
		r0 += r7
		exit
	done:
		r7 = 70
		r0 = 0
		exit
	f:
		goto back
	`)
	diff(t, diffCase{prog: prog, checkedOnly: true})
}

// TestYieldWeights: without a budget, code charges a call the size of the
// callee, so a loop calling a long straight-line function still returns to
// Go often enough to notice a cancelled context quickly (charging 1 per
// call would run about 5e10 instructions first).
func TestYieldWeights(t *testing.T) {
	var b strings.Builder
	b.WriteString("l:\n call f\n goto l\n f:\n")
	for range 50000 {
		b.WriteString("r0 += 1\n")
	}
	b.WriteString("exit\n")
	prog := mustAssemble(t, b.String())
	p, err := Compile(prog, nil, Options{Modes: Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	te := newEnv(t, false, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	te.env.Context = ctx
	start := time.Now()
	_, err = p.Run(te.env, 0, 0, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("stopped after %v", d)
	}
	c := &compiler{prog: prog, opts: &Options{}}
	c.analyze()
	if got := c.funcSize(2); got != 50001 {
		t.Fatalf("funcSize = %d, want 50001", got)
	}
}
