package rewrite

import (
	"math/bits"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

// seq builds an instruction sequence for Patch, with forward and backward
// jumps to labels resolved when it is done. Label -1 is the instruction
// after the sequence (where Patch lets a sequence leave).
type seq struct {
	// fold, when set, is 1 + the index of the map whose header fields
	// field folds into constants; 0 reads them through the handle in R1.
	fold   int
	insns  []isa.Instruction
	labels []int         // label -> instruction index
	fixups map[int]label // instruction index -> label it jumps to
}

type label int

// out is the label of the instruction after the sequence.
const out label = -1

func (s *seq) newLabel() label {
	s.labels = append(s.labels, -1)
	return label(len(s.labels) - 1)
}

func (s *seq) bind(l label) { s.labels[l] = len(s.insns) }

func (s *seq) emit(ins ...isa.Instruction) { s.insns = append(s.insns, ins...) }

// jump emits a conditional or unconditional jump (op without class) to l.
func (s *seq) jump(ins isa.Instruction, l label) {
	if s.fixups == nil {
		s.fixups = map[int]label{}
	}
	s.fixups[len(s.insns)] = l
	s.emit(ins)
}

// done resolves the jumps and returns the sequence.
func (s *seq) done() []isa.Instruction {
	for pc, l := range s.fixups {
		t := len(s.insns)
		if l != out {
			t = s.labels[l]
		}
		s.insns[pc].Off = int16(t - pc - 1)
	}
	return s.insns
}

// field loads the header field at off (after maps.HeaderFields) of the
// map whose handle is in R1, of size isa.SizeW or isa.SizeDW, into dst:
// a load through the handle, or with fold an isa.PseudoMapField constant
// the loader resolves (the fields an inlined lookup reads never change).
func (s *seq) field(size uint8, dst isa.Register, off int) {
	if s.fold == 0 {
		s.emit(ldx(size, dst, isa.R1, maps.HeaderFields+off))
		return
	}
	s.emit(
		isa.Instruction{Op: isa.OpLdImm64, Dst: dst, Src: isa.Register(isa.PseudoMapField), Off: int16(isa.SizeBytes(size)), Imm: int32(s.fold - 1)},
		isa.Instruction{Imm: int32(off)},
	)
}

// Instruction shorthands. All ALU is 64-bit.
func aluK(op uint8, dst isa.Register, imm int32) isa.Instruction {
	return isa.Instruction{Op: isa.ClassALU64 | op | isa.SrcK, Dst: dst, Imm: imm}
}

func aluX(op uint8, dst, src isa.Register) isa.Instruction {
	return isa.Instruction{Op: isa.ClassALU64 | op | isa.SrcX, Dst: dst, Src: src}
}

func ldx(size uint8, dst, src isa.Register, off int) isa.Instruction {
	return isa.Instruction{Op: isa.ClassLDX | isa.ModeMEM | size, Dst: dst, Src: src, Off: int16(off)}
}

// tldx is a trusted load (isa.ModeTrusted): of the map's own memory, at an
// address computed from constants and its links only.
func tldx(size uint8, dst, src isa.Register, off int) isa.Instruction {
	return isa.Instruction{Op: isa.ClassLDX | isa.ModeTrusted | size, Dst: dst, Src: src, Off: int16(off)}
}

func jmpK(op uint8, dst isa.Register, imm int32) isa.Instruction {
	return isa.Instruction{Op: isa.ClassJMP | op | isa.SrcK, Dst: dst, Imm: imm}
}

func jmpX(op uint8, dst, src isa.Register) isa.Instruction {
	return isa.Instruction{Op: isa.ClassJMP | op | isa.SrcX, Dst: dst, Src: src}
}

var ja = isa.Instruction{Op: isa.OpJA}

// ldImm64 is the two slots of dst = v.
func ldImm64(dst isa.Register, v uint64) []isa.Instruction {
	return []isa.Instruction{
		{Op: isa.OpLdImm64, Dst: dst, Imm: int32(uint32(v))},
		{Imm: int32(uint32(v >> 32))},
	}
}

// scale multiplies dst by the constant n, with a shift when n is a power of
// two (n must fit an int32).
func scale(dst isa.Register, n uint64) isa.Instruction {
	if n&(n-1) == 0 {
		return aluK(isa.ALULsh, dst, int32(bits.TrailingZeros64(n)))
	}
	return aluK(isa.ALUMul, dst, int32(n))
}
