package interp

import (
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

// aluLoop is an ALU-heavy loop: 7 instructions per iteration over r1 = 1000.
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

// memHash mixes a 1 KiB buffer (r1 = buffer, r2 = length) a word at a time,
// in the style of jhash: 12 instructions per 4-byte word.
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

func benchmarkProgram(b *testing.B, src string, size int, insns int, checked bool) {
	prog, err := isa.Assemble(src)
	if err != nil {
		b.Fatal(err)
	}
	p, err := New(prog, nil)
	if err != nil {
		b.Fatal(err)
	}
	env, addr := testEnv(b, checked, max(size, 1))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Run(env, addr, uint64(size), 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(insns)*float64(b.N)/b.Elapsed().Seconds(), "insns/s")
}

func BenchmarkALULoop(b *testing.B) {
	b.Run("unchecked", func(b *testing.B) { benchmarkProgram(b, aluLoop, 0, aluLoopInsns, false) })
	b.Run("checked", func(b *testing.B) { benchmarkProgram(b, aluLoop, 0, aluLoopInsns, true) })
}

func BenchmarkMemHash1K(b *testing.B) {
	b.Run("unchecked", func(b *testing.B) { benchmarkProgram(b, memHash, 1024, memHashInsns, false) })
	b.Run("checked", func(b *testing.B) { benchmarkProgram(b, memHash, 1024, memHashInsns, true) })
}
