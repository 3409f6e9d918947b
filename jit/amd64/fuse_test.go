//go:build amd64 && linux

package amd64

import (
	"bytes"
	"testing"
)

// TestFuse runs the idioms fuse emits as one instruction, and near misses,
// on both engines.
func TestFuse(t *testing.T) {
	const pre = `
		r1 = -5
		r2 = 0x87654321 ll
		r3 = 0x7fffffff
		r4 = -1
	`
	for name, body := range map[string]string{
		"zext":        "r0 = r2\n r0 <<= 32\n r0 >>= 32",
		"zext self":   "r0 = r2\n r2 <<= 32\n r2 >>= 32\n r0 += r2\n r2 = r2\n r2 <<= 32\n r2 >>= 32\n r0 += r2",
		"sext":        "r0 = r2\n r0 <<= 32\n r0 s>>= 32",
		"sext neg":    "r0 = r4\n r0 <<= 32\n r0 s>>= 32\n r5 = r3\n r5 <<= 32\n r5 s>>= 32\n r0 ^= r5",
		"lea":         "r0 = r1\n r0 += 100",
		"lea stack":   "r5 = r10\n r5 += -8\n *(u64 *)(r5 + 0) = r2\n r0 = *(u64 *)(r10 - 8)",
		"lea self":    "r1 = r1\n r1 += 7\n r0 = r1",
		"lea big":     "r0 = r2\n r0 += 0x7fffffff\n r5 = r2\n r5 += -0x80000000\n r0 ^= r5",
		"shift 31":    "r0 = r2\n r0 <<= 32\n r0 >>= 31",
		"other dst":   "r0 = r2\n r5 <<= 32\n r0 >>= 32",
		"alu32":       "r0 = r2\n w0 <<= 31\n w0 >>= 3",
		"target":      "r0 = r2\n if r1 == 0 goto m\n m: r0 += 1",
		"mid target":  "r0 = r2\n r0 <<= 32\n if r1 s< 0 goto m\n r0 = 7\n m: r0 >>= 32",
		"jump inside": "r0 = r3\n if r4 != 0 goto m\n r0 = r2\n r0 <<= 32\n m: r0 >>= 32",
	} {
		t.Run(name, func(t *testing.T) {
			prog := mustAssemble(t, pre+body+"\nexit")
			diff(t, diffCase{prog: prog})
			diff(t, diffCase{prog: prog, jit: Options{Blind: true}})
		})
	}
	// Budgets stop both engines at the same instruction.
	loop := mustAssemble(t, "r6 = 3\n l: r0 = r6\n r0 <<= 32\n r0 >>= 32\n r5 = r10\n r5 += -8\n r6 += -1\n if r6 != 0 goto l\n exit")
	for budget := uint64(1); budget < 30; budget++ {
		diff(t, diffCase{prog: loop, budget: budget, sameErr: budgetPC(loop)})
	}
	// bpf_for's next and NULL check (iterLoop), with budgets too.
	iter := loopProgram(t, iterLoop)
	for _, n := range []byte{0, 1, 5} {
		diff(t, diffCase{prog: iter, size: 64, init: []byte{n}})
		for budget := uint64(1); budget < 60; budget += 3 {
			diff(t, diffCase{prog: iter, size: 64, init: []byte{n}, budget: budget, sameErr: budgetPC(iter)})
		}
	}
	// The idioms take fewer bytes than their parts.
	long, short := mustAssemble(t, "r0 = r2\n r0 <<= 32\n r0 >>= 32\n r0 = r1\n r0 += 8\n exit"), mustAssemble(t, "r0 = r2\n r0 <<= 32\n exit")
	pl, err := Compile(long, nil, Options{Modes: Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	ps, err := Compile(short, nil, Options{Modes: Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	cl, _ := pl.Code(false)
	cs, _ := ps.Code(false)
	if len(cl) > len(cs) || !bytes.Contains(cl, []byte{0x89, 0xf3}) { // mov ebx, esi
		t.Errorf("fused code is %d bytes, the unfused prefix %d: % x", len(cl), len(cs), cl)
	}
}
