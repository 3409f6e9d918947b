package loader

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// ErrCORE means a program's CO-RE relocations could not be applied: no
// target BTF to apply them against, or a relocation record that does not
// fit its instruction. A relocation the target merely cannot satisfy is
// not an error: its instruction is poisoned (see RelocateCORE).
var ErrCORE = errors.New("CO-RE relocation failed")

// Poison is an instruction RelocateCORE poisoned: its relocation has no
// solution in the target BTF.
type Poison struct {
	// Insn is the instruction's index in wire slots, as the verifier
	// counts.
	Insn int
	// Relocation is the relocation that could not be satisfied.
	Relocation *btf.CORERelocation
}

// RelocateCORE applies the CO-RE relocations cilium/ebpf attached to insns
// (btf.CORERelocationMetadata) against the target BTF, in place, the way
// ebpf.NewProgramWithOptions does before loading into the kernel:
// btf.CORERelocate computes every fixup against targets (vmlinux first,
// then modules), with local type ids numbered by a fresh btf.Builder as
// cilium/ebpf numbers the BTF it loads with the program, and
// COREFixup.Apply patches each instruction. targets is called only when
// the program has relocations, so programs without them never read BTF.
//
// An unsatisfiable relocation poisons its instruction as libbpf and
// cilium/ebpf do: an LD_IMM64 becomes `r10 = 0xbad2310 ll` (the verifier:
// "frame pointer is read only"), any other instruction `call 0xbad2310`
// ("invalid func unknown#195896080"). The verifier rejects them only where
// it reaches them, so code behind a bpf_core_field_exists() that is false
// for the target still loads. The poisoned instructions are returned.
func RelocateCORE(insns asm.Instructions, bo binary.ByteOrder, targets func() ([]*btf.Spec, error)) ([]Poison, error) {
	poisons, _, err := RelocateCORELocal(insns, bo, targets)
	return poisons, err
}

// RelocateCORELocal is RelocateCORE, also returning the local types the
// relocations numbered, by id: what bpf_core_type_id_local gives the
// program (bpf_obj_new's argument), the ids of the BTF cilium/ebpf loads
// with the program.
func RelocateCORELocal(insns asm.Instructions, bo binary.ByteOrder, targets func() ([]*btf.Spec, error)) ([]Poison, map[btf.TypeID]btf.Type, error) {
	var relos []*btf.CORERelocation
	var at, pcs []int // each relocation's instruction: index in insns, wire index
	pc := 0
	for i := range insns {
		if r := btf.CORERelocationMetadata(&insns[i]); r != nil {
			relos = append(relos, r)
			at = append(at, i)
			pcs = append(pcs, pc)
		}
		pc += int(insns[i].Size() / asm.InstructionSize)
	}
	if len(relos) == 0 {
		return nil, nil, nil
	}
	specs, err := targets()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCORE, err)
	}
	if len(specs) == 0 {
		return nil, nil, fmt.Errorf("%w: no target BTF", ErrCORE)
	}
	if bo == nil {
		bo = binary.LittleEndian
	}
	var local btf.Builder
	locals := map[btf.TypeID]btf.Type{}
	add := func(t btf.Type) (btf.TypeID, error) {
		id, err := local.Add(t)
		if err == nil {
			locals[id] = t
		}
		return id, err
	}
	fixups, err := btf.CORERelocate(relos, specs, bo, add)
	if err != nil {
		// The error names the type but not the instruction: find the
		// first relocation that fails on its own.
		for j, r := range relos {
			var b btf.Builder
			if _, err := btf.CORERelocate([]*btf.CORERelocation{r}, specs, bo, b.Add); err != nil {
				return nil, nil, fmt.Errorf("%w: instruction %d: %s: %w", ErrCORE, pcs[j], r, err)
			}
		}
		return nil, nil, fmt.Errorf("%w: %w", ErrCORE, err)
	}
	var poisoned []Poison
	for j := range fixups {
		ins := &insns[at[j]]
		if err := applyFixup(&fixups[j], ins); err != nil {
			return nil, nil, fmt.Errorf("%w: instruction %d: %s: %w", ErrCORE, pcs[j], relos[j], err)
		}
		if IsCOREPoison(*ins) {
			poisoned = append(poisoned, Poison{Insn: pcs[j], Relocation: relos[j]})
		}
	}
	return poisoned, locals, nil
}

// IsCOREPoison reports whether ins is an instruction CO-RE poisoned.
func IsCOREPoison(ins asm.Instruction) bool {
	if ins.Constant != btf.COREBadRelocationSentinel {
		return false
	}
	return ins.IsBuiltinCall() || ins.IsConstantLoad(asm.DWord) && ins.Dst == asm.R10
}
