// Package isa defines the eBPF instruction set (RFC 9669 plus the Linux
// extensions): the wire encoding, structural validation, a disassembler that
// prints the kernel verifier-log syntax and an assembler that reads both that
// syntax and the uBPF/bpf_conformance dialect.
//
// A program is a []Instruction with one element per 8-byte slot, so indices
// match the kernel's instruction numbers; LD_IMM64 takes two slots and the
// second one carries the upper 32 bits of the constant in its Imm field.
package isa

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// InstructionSize is the size in bytes of one instruction slot.
const InstructionSize = 8

// Register is an eBPF register number, R0 to R10.
type Register uint8

// Registers. R10 is the read-only frame pointer.
const (
	R0 Register = iota
	R1
	R2
	R3
	R4
	R5
	R6
	R7
	R8
	R9
	R10
)

// MaxRegister is the highest valid register number.
const MaxRegister = R10

// Instruction is one 8-byte instruction slot.
type Instruction struct {
	Op  uint8
	Dst Register
	Src Register
	Off int16
	Imm int32
}

// Decode decodes one little-endian instruction slot. b must hold at least 8 bytes.
func Decode(b []byte) Instruction {
	return Instruction{
		Op:  b[0],
		Dst: Register(b[1] & 0x0f),
		Src: Register(b[1] >> 4),
		Off: int16(binary.LittleEndian.Uint16(b[2:])),
		Imm: int32(binary.LittleEndian.Uint32(b[4:])),
	}
}

// Encode appends the little-endian encoding of ins to b.
func (ins Instruction) Encode(b []byte) []byte {
	b = append(b, ins.Op, uint8(ins.Dst&0x0f)|uint8(ins.Src<<4))
	b = binary.LittleEndian.AppendUint16(b, uint16(ins.Off))
	return binary.LittleEndian.AppendUint32(b, uint32(ins.Imm))
}

// Uint64 returns the instruction slot as the 64-bit little-endian word that
// bpf_conformance's raw sections use.
func (ins Instruction) Uint64() uint64 {
	return binary.LittleEndian.Uint64(ins.Encode(make([]byte, 0, 8)))
}

// DecodeProgram decodes a byte slice of whole instruction slots.
func DecodeProgram(b []byte) ([]Instruction, error) {
	if len(b)%InstructionSize != 0 {
		return nil, fmt.Errorf("%w: program length %d is not a multiple of %d", ErrInvalidProgram, len(b), InstructionSize)
	}
	prog := make([]Instruction, len(b)/InstructionSize)
	for i := range prog {
		prog[i] = Decode(b[i*InstructionSize:])
	}
	return prog, nil
}

// EncodeProgram encodes a program to bytes.
func EncodeProgram(prog []Instruction) []byte {
	b := make([]byte, 0, len(prog)*InstructionSize)
	for _, ins := range prog {
		b = ins.Encode(b)
	}
	return b
}

// Class returns the instruction's class.
func (ins Instruction) Class() uint8 { return ins.Op & 0x07 }

// IsLdImm64 reports whether the instruction is the first slot of LD_IMM64.
func (ins Instruction) IsLdImm64() bool { return ins.Op == OpLdImm64 }

// Imm64 combines the immediates of the two slots of an LD_IMM64.
func Imm64(lo, hi Instruction) uint64 {
	return uint64(uint32(lo.Imm)) | uint64(uint32(hi.Imm))<<32
}

// LdImm64 returns the two slots of `dst = imm ll` with the given pseudo source.
func LdImm64(dst Register, src uint8, imm uint64) [2]Instruction {
	return [2]Instruction{
		{Op: OpLdImm64, Dst: dst, Src: Register(src), Imm: int32(uint32(imm))},
		{Imm: int32(uint32(imm >> 32))},
	}
}

// JumpTarget returns the slot index a jump or may_goto at pc goes to when
// taken; ok is false for instructions that do not jump.
func (ins Instruction) JumpTarget(pc int) (target int, ok bool) {
	class := ins.Class()
	if !IsJump(class) {
		return 0, false
	}
	switch ins.Op & 0xf0 {
	case JumpCall, JumpExit:
		return 0, false
	case JumpA:
		if class == ClassJMP32 {
			return pc + 1 + int(ins.Imm), true
		}
	}
	return pc + 1 + int(ins.Off), true
}

// IsLocalCall reports whether the instruction is a bpf-to-bpf call.
func (ins Instruction) IsLocalCall() bool {
	return ins.Op == OpCall && ins.Src == Register(CallLocal)
}

// IsPseudoFunc reports whether the instruction loads a subprogram address.
func (ins Instruction) IsPseudoFunc() bool {
	return ins.Op == OpLdImm64 && ins.Src == Register(PseudoFunc)
}

// ErrInvalidProgram is wrapped by every structural validation error.
var ErrInvalidProgram = errors.New("invalid program")

// InstructionError names the instruction a problem was found at.
type InstructionError struct {
	Index int   // slot index
	Err   error // wraps ErrInvalidProgram for structural problems
}

func (e *InstructionError) Error() string { return fmt.Sprintf("insn %d: %v", e.Index, e.Err) }
func (e *InstructionError) Unwrap() error { return e.Err }

func insnErr(i int, format string, args ...any) error {
	return &InstructionError{Index: i, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalidProgram}, args...)...)}
}
