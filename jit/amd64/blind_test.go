//go:build amd64 && linux

package amd64

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

// blindProg uses a distinct 32-bit immediate in every instruction form that
// carries one.
const blindProg = `
	r6 = r1
	r0 = 0x3c3c0001 ll
	r2 = 0x3c3c0002
	w3 = 0x3c3c0003
	r2 += 0x3c3c0004
	w3 -= 0x3c3c0005
	r2 |= 0x3c3c0006
	r2 &= 0x3c3c0007
	w3 ^= 0x3c3c0008
	r2 *= 0x3c3c0009
	w3 *= 0x3c3c000a
	r2 /= 0x3c3c000b
	w3 %= 0x3c3c000c
	r2 s/= 0x3c3c000d
	r0 += r2
	r0 += r3
	if r0 > 0x3c3c000e goto a
	r0 += 1
a:
	if w0 s< 0x3c3c000f goto b
	r0 += 2
b:
	if r0 & 0x3c3c0010 goto c
	r0 += 3
c:
	*(u32 *)(r10 - 8) = 0x3c3c0011
	*(u64 *)(r10 - 16) = 0x3c3c0012
	r4 = *(u32 *)(r10 - 8)
	r0 += r4
	r4 = *(u64 *)(r10 - 16)
	r0 += r4
	r5 = 0x3c3c0013 ll
	r0 ^= r5
	exit`

// TestBlinding checks that with blinding no program-chosen 32-bit
// immediate appears in the image (without it, they all do), and that the
// results do not change.
func TestBlinding(t *testing.T) {
	prog, err := isa.Assemble(blindProg)
	if err != nil {
		t.Fatal(err)
	}
	var imms [][]byte
	for _, ins := range prog {
		if ins.Imm>>16 == 0x3c3c {
			imms = append(imms, binary.LittleEndian.AppendUint32(nil, uint32(ins.Imm)))
		}
	}
	if len(imms) != 19 {
		t.Fatalf("%d immediates", len(imms))
	}
	for _, checked := range []bool{false, true} {
		for _, blind := range []bool{false, true} {
			mode := Unchecked
			if checked {
				mode = Checked
			}
			p, err := Compile(prog, nil, Options{Modes: mode, Blind: blind})
			if err != nil {
				t.Fatal(err)
			}
			code, _ := p.Code(checked)
			found := 0
			for _, imm := range imms {
				if bytes.Contains(code, imm) {
					found++
					if blind {
						t.Errorf("checked=%v: %x in the blinded image", checked, imm)
					}
				}
			}
			if !blind && found != len(imms) {
				t.Errorf("checked=%v: only %d of %d immediates in the plain image", checked, found, len(imms))
			}
			if p.Info(checked).Blinded != blind {
				t.Errorf("info %+v", p.Info(checked))
			}
			p.Close()
		}
		diffMode(t, diffCase{prog: prog, jit: Options{Blind: true}}, checked)
	}
}
