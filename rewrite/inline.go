package rewrite

import (
	"math/bits"

	"bpfvm/isa"
	"bpfvm/maps"
)

// InlineMapLookups replaces calls of bpf_map_lookup_elem on array maps, where
// the verifier proved which map every path passes (aux Map set, no
// conflict), with the lookup itself: a bounds check of the index and the
// address computation, as the kernel's array_map_gen_lookup. The map handle
// in R1 stays what it was; the value base is read from the map's header, so
// the rewritten program does not depend on where the map's memory is.
//
// It returns the number of calls inlined.
func InlineMapLookups(p *Program) (int, error) {
	lookup, _ := isa.HelperID("bpf_map_lookup_elem")
	n := 0
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := p.Insns[pc]
		if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallHelper) || ins.Imm != lookup {
			if ins.IsLdImm64() {
				pc++
			}
			continue
		}
		aux := p.Aux[pc]
		if aux.Map == nil || aux.MapConflict {
			continue
		}
		seq := arrayLookup(aux.Map.Spec)
		if seq == nil {
			continue
		}
		if err := p.Patch(pc, seq); err != nil {
			return n, err
		}
		pc += len(seq) - 1
		n++
	}
	return n, nil
}

// arrayLookup returns the inline lookup for an array map, or nil when the
// map is not one this rewrite handles.
func arrayLookup(s maps.Spec) []isa.Instruction {
	if s.Type != maps.Array || s.MaxEntries > 1<<31-1 {
		return nil
	}
	stride := (uint64(s.ValueSize) + 7) &^ 7
	if stride > 1<<31-1 {
		return nil
	}
	scale := isa.Instruction{Op: isa.ClassALU64 | isa.ALUMul | isa.SrcK, Dst: isa.R0, Imm: int32(stride)}
	if stride&(stride-1) == 0 {
		scale = isa.Instruction{Op: isa.ClassALU64 | isa.ALULsh | isa.SrcK, Dst: isa.R0, Imm: int32(bits.TrailingZeros64(stride))}
	}
	return []isa.Instruction{
		// r1 = value base, from the map header.
		{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeDW, Dst: isa.R1, Src: isa.R1, Off: int16(maps.HeaderFields + maps.ArrayFieldBase)},
		// r0 = index
		{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeW, Dst: isa.R0, Src: isa.R2},
		{Op: isa.ClassJMP | isa.JumpGE | isa.SrcK, Dst: isa.R0, Imm: int32(s.MaxEntries), Off: 3},
		scale,
		{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcX, Dst: isa.R0, Src: isa.R1},
		{Op: isa.OpJA, Off: 1},
		{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R0, Imm: 0},
	}
}
