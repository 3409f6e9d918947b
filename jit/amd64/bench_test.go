//go:build amd64 && linux

package amd64

import (
	"testing"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// aluLoop is the interpreter's ALU benchmark: 7 instructions per iteration.
const aluLoop = `
	r0 = 0
	r1 = 1000
loop:
	r2 = r1
	r2 <<= 3
	r0 += r2
	r0 ^= r1
	r0 *= 3
	r1 += -1
	if r1 != 0 goto loop
	exit
`

const aluLoopInsns = 2 + 7*1000 + 1

// memHash mixes a 1 KiB buffer a word at a time (interp's benchmark).
const memHash = `
	r0 = 0x9e3779b9
	r3 = r1
	r3 += r2
loop:
	r4 = *(u32 *)(r1 +0)
	r0 += r4
	r5 = r0
	r5 <<= 13
	r0 ^= r5
	r5 = r0
	r5 >>= 7
	r0 ^= r5
	r0 &= 0xffffffff
	r1 += 4
	if r1 < r3 goto loop
	exit
`

const memHashInsns = 3 + 11*256 + 1

// stackLoop spills to the stack every iteration.
const stackLoop = `
	r0 = 0
	r1 = 1000
loop:
	*(u64 *)(r10 - 8) = r1
	r2 = *(u64 *)(r10 - 8)
	r0 += r2
	r1 += -1
	if r1 != 0 goto loop
	exit
`

const stackLoopInsns = 2 + 5*1000 + 1

// subCallLoop calls a subprogram that spills to its stack and writes its
// caller's every iteration: the cost of checked calls and returns.
const subCallLoop = `
	r6 = 0
	r7 = 1000
loop:
	r1 = r10
	r1 += -8
	r2 = r7
	call f
	r6 += r0
	r7 += -1
	if r7 != 0 goto loop
	r0 = r6
	exit
f:
	*(u64 *)(r10 - 8) = r2
	r0 = *(u64 *)(r10 - 8)
	*(u64 *)(r1 + 0) = r0
	exit
`

const subCallLoopInsns = 2 + 11*1000 + 2

func benchEngine(b *testing.B, e engine, te *testEnv, insns int) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Run(te.env, te.addr, uint64(te.size), 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(insns)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Ginsns/s")
}

func benchProgram(b *testing.B, src string, size, insns int) {
	prog, err := isa.Assemble(src)
	if err != nil {
		b.Fatal(err)
	}
	ip, err := interp.New(prog, nil)
	if err != nil {
		b.Fatal(err)
	}
	jp, err := Compile(prog, nil, Options{Modes: Checked | Unchecked})
	if err != nil {
		b.Fatal(err)
	}
	defer jp.Close()
	for _, checked := range []bool{false, true} {
		mode := "unchecked"
		if checked {
			mode = "checked"
		}
		te := newEnv(b, checked, max(size, 1))
		te.size = size
		b.Run("jit/"+mode, func(b *testing.B) { benchEngine(b, jp, te, insns) })
		b.Run("interp/"+mode, func(b *testing.B) { benchEngine(b, ip, te, insns) })
	}
}

// Compare the jit and interp lines of one run: the ratio of their ns/op is
// the JIT's speed-up.
func BenchmarkALULoop(b *testing.B)     { benchProgram(b, aluLoop, 0, aluLoopInsns) }
func BenchmarkMemHash1K(b *testing.B)   { benchProgram(b, memHash, 1024, memHashInsns) }
func BenchmarkStackLoop(b *testing.B)   { benchProgram(b, stackLoop, 0, stackLoopInsns) }
func BenchmarkSubCallLoop(b *testing.B) { benchProgram(b, subCallLoop, 0, subCallLoopInsns) }

// BenchmarkHelperCall measures the round trip of a helper call: native code
// exits to Go, Go calls the helper and re-enters native code. It reports
// ns per loop iteration; the "nocall" lines run the same loop with a move
// in place of the call, so the difference is the round trip.
func BenchmarkHelperCall(b *testing.B) {
	withCall, err := isa.Assemble(`
		r6 = 1000
	l:
		r1 = r6
		call 1
		r6 += -1
		if r6 != 0 goto l
		exit
	`)
	if err != nil {
		b.Fatal(err)
	}
	noCall, err := isa.Assemble(`
		r6 = 1000
	l:
		r1 = r6
		r0 = r1
		r6 += -1
		if r6 != 0 goto l
		exit
	`)
	if err != nil {
		b.Fatal(err)
	}
	helpers := func(id int32) vm.Helper {
		return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) { return r1, nil }
	}
	for _, pr := range []struct {
		name string
		prog []isa.Instruction
	}{{"call", withCall}, {"nocall", noCall}} {
		jp, err := Compile(pr.prog, helpers, Options{Modes: Checked | Unchecked})
		if err != nil {
			b.Fatal(err)
		}
		defer jp.Close()
		ip, _ := interp.New(pr.prog, helpers)
		for _, checked := range []bool{false, true} {
			mode := "unchecked"
			if checked {
				mode = "checked"
			}
			te := newEnv(b, checked, 64)
			for _, e := range []struct {
				name string
				e    engine
			}{{"jit", jp}, {"interp", ip}} {
				b.Run(e.name+"/"+pr.name+"/"+mode, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := e.e.Run(te.env, 0, 0, 0); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/iter")
				})
			}
		}
	}
}

// BenchmarkRun measures the fixed cost of a run: r0 = 0; exit.
func BenchmarkRun(b *testing.B) {
	prog := []isa.Instruction{insn(isa.ClassALU64|isa.ALUMov, isa.R0, 0, 0, 0), exitInsn}
	jp, err := Compile(prog, nil, Options{Modes: Checked | Unchecked})
	if err != nil {
		b.Fatal(err)
	}
	defer jp.Close()
	ip, _ := interp.New(prog, nil)
	te := newEnv(b, false, 64)
	b.Run("jit", func(b *testing.B) { benchEngine(b, jp, te, 2) })
	b.Run("interp", func(b *testing.B) { benchEngine(b, ip, te, 2) })
}

func BenchmarkCompile(b *testing.B) {
	prog, err := isa.Assemble(memHash)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := Compile(prog, nil, Options{Modes: Unchecked})
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
