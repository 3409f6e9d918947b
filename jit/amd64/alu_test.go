//go:build amd64 && linux

package amd64

import (
	"fmt"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

var corner64 = []uint64{
	0, 1, 2, 3, 7, 8, 31, 32, 33, 63, 64, 65, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff,
	0x7fffffff, 0x80000000, 0xffffffff, 0x100000000, 0x1_0000_0001,
	0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff, 0xfffffffffffffffe,
	0xffffffff80000000, 0xffffffff7fffffff, 0x123456789abcdef0, 0xdeadbeefcafebabe, 0x00000000_8000_0001,
}

var cornerImm = []int32{0, 1, -1, 2, -2, 3, 7, 8, 13, 31, 32, 33, 63, 64, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff,
	0x7fffffff, -0x80000000, 0x12345678, -0x12345678}

func ldImm(dst isa.Register, v uint64) []isa.Instruction {
	p := isa.LdImm64(dst, 0, v)
	return p[:]
}

func insn(op uint8, dst, src isa.Register, off int16, imm int32) isa.Instruction {
	return isa.Instruction{Op: op, Dst: dst, Src: src, Off: off, Imm: imm}
}

var exitInsn = isa.Instruction{Op: isa.OpExit}

// regPairs are (dst, src) pairs that exercise the register mapping: R3 is
// x86's cl, R0 is the cmpxchg accumulator, same-register forms.
var regPairs = [][2]isa.Register{
	{isa.R0, isa.R1}, {isa.R3, isa.R1}, {isa.R1, isa.R3}, {isa.R3, isa.R3}, {isa.R2, isa.R2},
	{isa.R9, isa.R4}, {isa.R6, isa.R7}, {isa.R5, isa.R0},
}

// baseFor picks a register for the data pointer that is not in the pair.
func baseFor(regs ...isa.Register) isa.Register {
	for _, b := range []isa.Register{isa.R9, isa.R8, isa.R7, isa.R6} {
		used := false
		for _, r := range regs {
			used = used || r == b
		}
		if !used {
			return b
		}
	}
	panic("no base register")
}

// aluProgram applies op to every value pair (register form) or value and
// immediate (K form), storing each result and finally every register.
func aluProgram(op uint8, off int16, dst, src isa.Register, x bool) ([]isa.Instruction, int) {
	base := baseFor(dst, src)
	prog := []isa.Instruction{insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, base, isa.R1, 0, 0)}
	// Fill every other register with garbage so upper halves show.
	for r := isa.R0; r <= isa.R9; r++ {
		if r != base {
			prog = append(prog, ldImm(r, 0x5555_aaaa_0000_0000|uint64(r)*0x1111)...)
		}
	}
	slot := int16(0)
	store := func(r isa.Register) {
		prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, base, r, slot*8, 0))
		slot++
	}
	if x {
		for _, a := range corner64 {
			for _, b := range corner64 {
				prog = append(prog, ldImm(src, b)...)
				if dst != src {
					prog = append(prog, ldImm(dst, a)...)
				}
				prog = append(prog, insn(op, dst, src, off, 0))
				store(dst)
				if dst != src {
					store(src)
				}
			}
		}
	} else {
		for _, a := range corner64 {
			for _, imm := range cornerImm {
				prog = append(prog, ldImm(dst, a)...)
				prog = append(prog, insn(op, dst, 0, off, imm))
				store(dst)
			}
		}
	}
	for r := isa.R0; r <= isa.R10; r++ {
		if r != base && r != isa.R10 {
			store(r)
		}
	}
	prog = append(prog, exitInsn)
	return prog, int(slot) * 8
}

type aluOp struct {
	name string
	op   uint8 // operation bits
	off  int16
	imm  int32 // for END
}

var aluOps = []aluOp{
	{"add", isa.ALUAdd, 0, 0}, {"sub", isa.ALUSub, 0, 0}, {"mul", isa.ALUMul, 0, 0},
	{"div", isa.ALUDiv, 0, 0}, {"sdiv", isa.ALUDiv, 1, 0}, {"mod", isa.ALUMod, 0, 0}, {"smod", isa.ALUMod, 1, 0},
	{"or", isa.ALUOr, 0, 0}, {"and", isa.ALUAnd, 0, 0}, {"xor", isa.ALUXor, 0, 0},
	{"lsh", isa.ALULsh, 0, 0}, {"rsh", isa.ALURsh, 0, 0}, {"arsh", isa.ALUArsh, 0, 0},
	{"mov", isa.ALUMov, 0, 0},
}

func TestALU(t *testing.T) {
	for _, class := range []uint8{isa.ClassALU64, isa.ClassALU} {
		for _, o := range aluOps {
			for _, x := range []bool{false, true} {
				src := "K"
				if x {
					src = "X"
				}
				name := fmt.Sprintf("%s%d%s", o.name, map[uint8]int{isa.ClassALU: 32, isa.ClassALU64: 64}[class], src)
				t.Run(name, func(t *testing.T) {
					pairs := regPairs
					if !x {
						pairs = [][2]isa.Register{{isa.R0, 0}, {isa.R3, 0}, {isa.R2, 0}, {isa.R6, 0}, {isa.R9, 0}}
					}
					for _, pr := range pairs {
						op := class | o.op
						if x {
							op |= isa.SrcX
						}
						prog, size := aluProgram(op, o.off, pr[0], pr[1], x)
						if err := isa.Validate(prog); err != nil {
							t.Fatal(err)
						}
						diff(t, diffCase{prog: prog, size: size})
						if t.Failed() {
							t.Fatalf("dst %v src %v", pr[0], pr[1])
						}
					}
				})
			}
		}
	}
}

func TestALUUnary(t *testing.T) {
	type u struct {
		name  string
		class uint8
		op    uint8
		off   int16
		imm   int32
	}
	var ops []u
	for _, c := range []uint8{isa.ClassALU, isa.ClassALU64} {
		ops = append(ops, u{"neg", c, isa.ALUNeg, 0, 0})
	}
	for _, w := range []int32{16, 32, 64} {
		ops = append(ops, u{fmt.Sprint("le", w), isa.ClassALU, isa.ALUEnd | isa.EndToLE, 0, w})
		ops = append(ops, u{fmt.Sprint("be", w), isa.ClassALU, isa.ALUEnd | isa.EndToBE, 0, w})
		ops = append(ops, u{fmt.Sprint("bswap", w), isa.ClassALU64, isa.ALUEnd, 0, w})
	}
	for _, o := range []int16{8, 16} {
		ops = append(ops, u{fmt.Sprint("movsx32_", o), isa.ClassALU, isa.ALUMov | isa.SrcX, o, 0})
	}
	for _, o := range []int16{8, 16, 32} {
		ops = append(ops, u{fmt.Sprint("movsx64_", o), isa.ClassALU64, isa.ALUMov | isa.SrcX, o, 0})
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			for _, pr := range regPairs {
				src := pr[1]
				if o.op&0xf0 != isa.ALUMov {
					src = 0
				}
				base := baseFor(pr[0], src)
				prog := []isa.Instruction{insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, base, isa.R1, 0, 0)}
				slot := int16(0)
				for _, v := range corner64 {
					if o.op&0xf0 == isa.ALUMov {
						prog = append(prog, ldImm(pr[0], 0xabcdef0123456789)...)
						prog = append(prog, ldImm(src, v)...)
					} else {
						prog = append(prog, ldImm(pr[0], v)...)
					}
					prog = append(prog, insn(o.class|o.op, pr[0], src, o.off, o.imm))
					prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, base, pr[0], slot*8, 0))
					slot++
				}
				prog = append(prog, exitInsn)
				if err := isa.Validate(prog); err != nil {
					t.Fatal(err)
				}
				diff(t, diffCase{prog: prog, size: int(slot) * 8})
				if t.Failed() {
					t.Fatalf("dst %v src %v", pr[0], src)
				}
			}
		})
	}
}
