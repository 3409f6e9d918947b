//go:build amd64 && linux

package amd64

import (
	"encoding/binary"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// genProgram turns fuzz input into a valid program of straight-line code and
// forward jumps over every instruction class: 8 input bytes per instruction.
// R1 points at a 64-byte buffer and R2 holds its length.
func genProgram(data []byte) []isa.Instruction {
	var prog []isa.Instruction
	n := min(len(data)/8, 200)
	for i := 0; i < n; i++ {
		b := data[i*8 : i*8+8]
		kind := b[0]
		dst := isa.Register(b[1] & 0x0f % 10)
		src := isa.Register(b[1] >> 4 % 11)
		off := int16(binary.LittleEndian.Uint16(b[2:]))
		imm := int32(binary.LittleEndian.Uint32(b[4:]))
		// Memory offsets mostly near the buffer and the frame.
		moff := int16(int8(b[2])) % 72
		remaining := n - i // instructions left before the final exit
		switch kind % 16 {
		case 0, 1, 2, 3: // ALU / ALU64
			class := isa.ClassALU64
			if kind&0x10 != 0 {
				class = isa.ClassALU
			}
			op := (b[0] >> 5 & 7) | (b[3]&1)<<3 // 0..15
			ins := isa.Instruction{Op: class | op<<4, Dst: dst, Imm: imm}
			if b[3]&2 != 0 {
				ins.Op |= isa.SrcX
				ins.Src, ins.Imm = src, 0
			}
			switch op << 4 {
			case isa.ALUDiv, isa.ALUMod:
				ins.Off = int16(b[3] >> 2 & 1)
				if b[3]&0x80 != 0 && ins.Op&isa.SrcX == 0 {
					ins.Imm = []int32{0, -1, 1, -0x80000000}[b[3]>>3&3]
				}
			case isa.ALUNeg:
				ins.Op &^= isa.SrcX
				ins.Src, ins.Imm = 0, 0
			case isa.ALUEnd:
				ins.Imm = []int32{16, 32, 64, 16}[b[3]>>2&3]
				ins.Src = 0
				if class == isa.ClassALU64 {
					ins.Op &^= isa.SrcX
				}
			case isa.ALUMov:
				if ins.Op&isa.SrcX != 0 && b[3]&4 != 0 {
					ins.Off = []int16{8, 16, 32, 8}[b[3]>>3&3]
					if class == isa.ClassALU && ins.Off == 32 {
						ins.Off = 16
					}
				}
			case 0xe0, 0xf0:
				ins.Op = class | isa.ALUAdd
			}
			prog = append(prog, ins)
		case 4, 5: // conditional forward jump (or JA)
			class := isa.ClassJMP
			if kind&0x10 != 0 {
				class = isa.ClassJMP32
			}
			ops := []uint8{isa.JumpEQ, isa.JumpGT, isa.JumpGE, isa.JumpSet, isa.JumpNE, isa.JumpSGT,
				isa.JumpSGE, isa.JumpLT, isa.JumpLE, isa.JumpSLT, isa.JumpSLE, isa.JumpA}
			op := ops[int(b[0]>>5|(b[3]&1)<<3)%len(ops)]
			target := int16(uint16(off) % uint16(remaining))
			ins := isa.Instruction{Op: class | op, Dst: dst, Off: target, Imm: imm}
			if op == isa.JumpA {
				ins = isa.Instruction{Op: isa.OpJA, Off: target}
			} else if b[3]&2 != 0 {
				ins.Op |= isa.SrcX
				ins.Src, ins.Imm = src, 0
			}
			prog = append(prog, ins)
		case 6, 7: // LDX, MEMSX
			size := []uint8{isa.SizeB, isa.SizeH, isa.SizeW, isa.SizeDW}[b[0]>>4&3]
			mode := isa.ModeMEM
			if kind&0x40 != 0 && size != isa.SizeDW {
				mode = isa.ModeMEMSX
			}
			base := []isa.Register{isa.R1, isa.R10, src}[int(b[3])%3]
			if base == isa.R10 {
				moff = -moff - 8
			}
			prog = append(prog, isa.Instruction{Op: isa.ClassLDX | mode | size, Dst: dst, Src: base, Off: moff})
		case 8, 9: // ST, STX
			size := []uint8{isa.SizeB, isa.SizeH, isa.SizeW, isa.SizeDW}[b[0]>>4&3]
			base := []isa.Register{isa.R1, isa.R10, dst}[int(b[3])%3]
			if base == isa.R10 {
				moff = -moff - 8
			}
			if kind&0x40 != 0 {
				prog = append(prog, isa.Instruction{Op: isa.ClassST | isa.ModeMEM | size, Dst: base, Off: moff, Imm: imm})
			} else {
				prog = append(prog, isa.Instruction{Op: isa.ClassSTX | isa.ModeMEM | size, Dst: base, Src: src, Off: moff})
			}
		case 10: // atomics
			ops := []int32{isa.AtomicAdd, isa.AtomicOr, isa.AtomicAnd, isa.AtomicXor,
				isa.AtomicAdd | isa.AtomicFetch, isa.AtomicOr | isa.AtomicFetch, isa.AtomicAnd | isa.AtomicFetch,
				isa.AtomicXor | isa.AtomicFetch, isa.AtomicXchg, isa.AtomicCmpXchg, isa.AtomicLoadAcquire, isa.AtomicStoreRelease}
			op := ops[int(b[0]>>4)%len(ops)]
			sizes := []uint8{isa.SizeW, isa.SizeDW}
			if op == isa.AtomicLoadAcquire || op == isa.AtomicStoreRelease {
				sizes = []uint8{isa.SizeB, isa.SizeH, isa.SizeW, isa.SizeDW}
			}
			size := sizes[int(b[3])%len(sizes)]
			base := []isa.Register{isa.R1, isa.R10}[b[3]>>2&1]
			if base == isa.R10 {
				moff = -moff - 8
			}
			if b[3]&0x10 == 0 {
				moff &^= int16(isa.SizeBytes(size) - 1) // mostly aligned
			}
			ins := isa.Instruction{Op: isa.ClassSTX | isa.ModeATOMIC | size, Dst: base, Src: src, Off: moff, Imm: op}
			if op == isa.AtomicLoadAcquire {
				ins.Dst, ins.Src = dst, base
			}
			prog = append(prog, ins)
		case 11: // LD_IMM64
			v := uint64(uint32(imm)) | uint64(binary.LittleEndian.Uint32(b[0:4]))<<32
			p := isa.LdImm64(dst, 0, v)
			prog = append(prog, p[:]...)
		case 12: // LD_ABS / LD_IND
			size := []uint8{isa.SizeB, isa.SizeH, isa.SizeW, isa.SizeB}[b[0]>>4&3]
			if kind&0x40 != 0 {
				prog = append(prog, isa.Instruction{Op: isa.ClassLD | isa.ModeIND | size, Src: src, Imm: imm % 80})
			} else {
				prog = append(prog, isa.Instruction{Op: isa.ClassLD | isa.ModeABS | size, Imm: imm % 80})
			}
		case 13: // helper: served by Go, or by a native routine
			prog = append(prog, isa.Instruction{Op: isa.OpCall, Imm: []int32{1, idCPU, idRandom, idNuma}[b[1]>>6]})
		case 14: // pointer arithmetic on buffer-derived registers
			prog = append(prog, isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: dst, Src: isa.R1},
				isa.Instruction{Op: isa.ClassALU64 | isa.ALUAdd, Dst: dst, Imm: int32(int8(b[4]))})
		default:
			prog = append(prog, isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: isa.R0, Src: src})
		}
	}
	prog = append(prog, isa.Instruction{Op: isa.OpExit})
	return prog
}

func fuzzHelpers(id int32) vm.Helper {
	if testNatives(id) != vm.NoNative {
		return goHelpers(id)
	}
	if id != 1 {
		return nil
	}
	return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
		return r1*3 ^ r2*5 ^ r3*7 ^ r4*11 ^ r5*13, nil
	}
}

// fuzzOptions picks compile options from the input: native routines in
// near or far memory, indirect calls through the retpoline, blinding.
func fuzzOptions(data []byte) Options {
	sum := 0
	for _, b := range data {
		sum += int(b)
	}
	o := Options{Natives: testNatives}
	o.Blind = sum&1 != 0
	o.Far = sum&2 != 0
	o.Retpoline = sum&4 != 0
	return o
}

// maxFuzzInput bounds FuzzJITvsInterp's inputs (64 instructions): longer
// ones are skipped, so that they never become interesting and the fuzzer
// never spends its time minimising them (execs/s fell to 0 for the whole
// default 60 s of minimising a long input). Run the campaign with a short
// -fuzzminimizetime as well (README.md, "Testing").
const maxFuzzInput = 8 * 64

func FuzzJITvsInterp(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		prog := genProgram(data)
		if !engineValid(prog) {
			return
		}
		init := make([]byte, 64)
		for i := range init {
			init[i] = byte(i*37 + 11)
		}
		diffMode(t, diffCase{prog: prog, helpers: fuzzHelpers, size: 64, init: init, r2: 64, jit: fuzzOptions(data)}, true)
	})
}

var fuzzSeeds = [][]byte{
	{0x00, 0x21, 0, 0, 5, 0, 0, 0, 0x37, 0x12, 0, 1, 0, 0, 0, 0x80},
	{0x06, 0x01, 8, 0, 0, 0, 0, 0, 0x0a, 0x21, 0, 0, 0, 0, 0, 0, 0x08, 0x12, 16, 0, 0, 0, 0, 0},
	{0x0d, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x13, 3, 0, 9, 0, 0, 0, 0x0b, 0x40, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66},
	{0x0c, 0x20, 0, 0, 4, 0, 0, 0, 0x4c, 0x10, 0, 0, 60, 0, 0, 0, 0x0e, 0x03, 0, 0, 0x10, 0, 0, 0},
	{0xa3, 0x45, 0, 0x87, 0, 0, 0, 0, 0x43, 0x15, 0, 0x82, 0xff, 0xff, 0xff, 0xff},
	{0x1a, 0x21, 4, 0, 0, 0, 0, 0, 0x9a, 0x21, 0, 0x10, 0, 0, 0, 0, 0xba, 0x21, 0, 0x04, 0, 0, 0, 0},
}

// engineValid reports whether prog is a loaded program the engines run:
// Validate leaves writes to R10 to the verifier, ValidateXlated (the
// engines) refuses them.
func engineValid(prog []isa.Instruction) bool {
	return isa.Validate(prog) == nil && isa.ValidateXlated(prog) == nil
}

// TestGenerated runs the fuzz target's generator on pseudo-random inputs, so
// that plain "go test" covers it too.
func TestGenerated(t *testing.T) {
	seed := uint64(0x9e3779b97f4a7c15)
	next := func() byte {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return byte(seed)
	}
	init := make([]byte, 64)
	for i := range init {
		init[i] = byte(i*37 + 11)
	}
	iters := 3000
	if testing.Short() {
		iters = 300
	}
	for range iters {
		data := make([]byte, 8*(1+int(next())%40))
		for i := range data {
			data[i] = next()
		}
		prog := genProgram(data)
		if !engineValid(prog) {
			continue
		}
		diffMode(t, diffCase{prog: prog, helpers: fuzzHelpers, size: 64, init: init, r2: 64, jit: fuzzOptions(data)}, true)
		if t.Failed() {
			t.Fatalf("input %x", data)
		}
	}
}
