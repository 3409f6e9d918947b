package bpfvm

import (
	"fmt"
	"runtime"

	"github.com/bpfvm/bpfvm/isa"
)

// ProgramInfo describes a loaded program, as cilium/ebpf's ProgramInfo
// (Program.Info) describes the kernel's: what bpfvm knows of it.
type ProgramInfo struct {
	Type ProgramType
	// Tag is the kernel's tag of the program: the first 8 bytes of the
	// SHA-256 of its instructions as loaded, map references zeroed, in
	// hex (Linux 6.18's; kernels before it hash with SHA-1).
	Tag string
	// Name is the program's name as the kernel keeps it: at most 15
	// bytes.
	Name string

	id       ProgramID
	maps     []MapID
	verified uint32
	jited    uint32
	xlated   int
}

// Info returns the program's metadata; it fails with ErrClosed on a closed
// program.
func (p *Program) Info() (*ProgramInfo, error) {
	if p.closed() {
		return nil, fmt.Errorf("program %s: info: %w", p.name, ErrClosed)
	}
	name := p.name
	if len(name) > 15 {
		name = name[:15]
	}
	pi := &ProgramInfo{Type: p.typ, Tag: isa.Tag(p.insns), Name: name, id: ProgramID(p.ID()), xlated: len(p.xlated) * 8}
	for _, m := range p.maps {
		pi.maps = append(pi.maps, MapID(m.ID()))
	}
	if p.Verified() {
		pi.verified = uint32(p.stats.Processed)
	}
	if code, _, ok := p.NativeCode(); ok {
		pi.jited = uint32(len(code))
	}
	return pi, nil
}

// ID returns the program's id (Program.ID).
func (pi *ProgramInfo) ID() (ProgramID, bool) { return pi.id, pi.id > 0 }

// MapIDs returns the ids of the maps the program references.
func (pi *ProgramInfo) MapIDs() ([]MapID, bool) { return pi.maps, true }

// VerifiedInstructions returns how many instructions the verifier
// processed; false for a program that was not verified.
func (pi *ProgramInfo) VerifiedInstructions() (uint32, bool) { return pi.verified, pi.verified > 0 }

// JitedSize returns the size of the program's machine code, 0 when it runs
// on the interpreter.
func (pi *ProgramInfo) JitedSize() (uint32, error) { return pi.jited, nil }

// TranslatedSize returns the size in bytes of the program as it runs
// (Program.XlatedInstructions).
func (pi *ProgramInfo) TranslatedSize() (int, error) { return pi.xlated, nil }

// PossibleCPU returns the number of CPUs of a collection loaded with the
// default NumCPU (GOMAXPROCS), which is how many values per-CPU maps hold
// there, as cilium/ebpf's PossibleCPU gives the kernel's count for sizing
// per-CPU values. A collection with another NumCPU has that many.
func PossibleCPU() (int, error) { return runtime.GOMAXPROCS(0), nil }

// MustPossibleCPU is PossibleCPU, which cannot fail here.
func MustPossibleCPU() int { return runtime.GOMAXPROCS(0) }
