//go:build amd64 && linux

package amd64

import (
	"fmt"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

// TestMaskedALU compares the JIT's isa.OpMaskedALU and isa.OpNospec with
// the interpreter's, for every flag combination, register pairs and
// corner values of pointer, offset and limit.
func TestMaskedALU(t *testing.T) {
	limits := []int32{0, 1, 7, 31, 47, 511, 0x7fffffff, -1}
	for flags := int16(0); flags < 16; flags++ {
		t.Run(fmt.Sprintf("flags%d", flags), func(t *testing.T) {
			for _, pr := range regPairs {
				dst, src := pr[0], pr[1]
				if dst == src {
					continue // pointer and offset are two registers
				}
				base := baseFor(dst, src)
				prog := []isa.Instruction{insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, base, isa.R1, 0, 0)}
				slot := int16(0)
				store := func(r isa.Register) {
					prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, base, r, slot*8, 0))
					slot++
				}
				for _, limit := range limits {
					for _, a := range corner64[:12] {
						for _, b := range corner64 {
							prog = append(prog, ldImm(dst, a)...)
							prog = append(prog, ldImm(src, b)...)
							prog = append(prog, isa.Instruction{Op: isa.OpNospec})
							prog = append(prog, isa.Instruction{Op: isa.OpMaskedALU, Dst: dst, Src: src, Off: flags, Imm: limit})
							store(dst)
							store(src)
						}
					}
				}
				prog = append(prog, exitInsn)
				if err := isa.ValidateXlated(prog); err != nil {
					t.Fatal(err)
				}
				diff(t, diffCase{prog: prog, size: int(slot) * 8})
				if t.Failed() {
					t.Fatalf("dst %v src %v", dst, src)
				}
			}
		})
	}
}
