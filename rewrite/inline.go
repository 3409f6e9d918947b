package rewrite

import (
	"errors"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

// InlineOptions choose what InlineHelpers inlines, per engine: an inlined
// sequence runs natively on the JIT but instruction by instruction on the
// interpreter, where a long one can cost more than the helper call it
// replaces (DESIGN.md has the measurements).
type InlineOptions struct {
	// Interpreter inlines only what pays on the interpreter, where every
	// inlined instruction is a dispatch of about 3 ns and a helper call
	// about 10: array and array-of-maps lookups (about even) and
	// bpf_get_smp_processor_id; per-CPU array and hash-family lookups stay
	// helper calls.
	Interpreter bool
	// KnownMaps inlines only lookups in maps the program references
	// (verifier.MapInfo.Index >= 0), whose memory is known at load time;
	// lookups in inner maps, known only at run time, stay helper calls.
	// Checked runs of verified programs need it: they can grant the
	// memory an inlined lookup reads only for maps they know of.
	KnownMaps bool
	// Helpers says which helpers a call's id stands for (nil: the
	// built-in ones, helper.Builtin): only a helper whose entry allows
	// it is inlined, never a host helper in its place.
	Helpers func(id int32) *helper.Helper
}

// inlineKind returns how the helper a call's id stands for may be inlined.
func inlineKind(helpers func(int32) *helper.Helper, id int32) helper.Inline {
	if helpers == nil {
		helpers = helper.Builtin().Lookup
	}
	if h := helpers(id); h != nil {
		return h.Inline
	}
	return helper.InlineNone
}

// maxInlineKey is the largest hash-map key whose lookup is inlined: the
// sequence is unrolled over the key, about 15 instructions per 8 bytes.
const maxInlineKey = 128

// InlineHelpers replaces helper calls with equivalent instructions:
//
//   - bpf_map_lookup_elem where the verifier proved which map every path
//     passes (aux Map set, no conflict), for arrays, per-CPU arrays and
//     arrays of maps (bounds check and address computation, as the
//     kernel's array_map_gen_lookup) and for the hash family including
//     hash of maps (hash.go's lock-free lookup, specialised for the key
//     size: inline_hash.go);
//   - bpf_get_smp_processor_id, as the internal isa.OpCPUIndex.
//
// The map handle in R1 is read, never assumed: every map-specific address
// (value base, buckets, seed) comes from the map's header, so the rewritten
// program does not depend on where a map's memory is, and a lookup in an
// inner map (whose handle is only known at run time) works as well. The
// sequences use R0-R5 as scratch: after a helper call R1-R5 are unreadable
// for the verifier, so nothing after the call can depend on them.
//
// All calls are replaced in one pass (PatchAll), so the cost is linear in
// the program's size whatever the number of calls. Inlining never makes a
// program fail to load: calls stay calls where the program would outgrow
// isa.MaxInstructions, and all of them when a jump would go out of range.
//
// It returns the number of calls inlined.
func InlineHelpers(p *Program, opts InlineOptions) (int, error) {
	var rs []Replacement
	size := len(p.Insns)
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := p.Insns[pc]
		if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallHelper) {
			if ins.IsLdImm64() {
				pc++
			}
			continue
		}
		var seq []isa.Instruction
		switch inlineKind(opts.Helpers, ins.Imm) {
		case helper.InlineCPUID:
			seq = []isa.Instruction{{Op: isa.OpCPUIndex, Dst: isa.R0}}
		case helper.InlineMapLookup:
			aux := p.Aux[pc]
			if aux.Map == nil || aux.MapConflict || opts.KnownMaps && aux.Map.Index < 0 {
				continue
			}
			fold := 0
			if opts.KnownMaps {
				fold = aux.Map.Index + 1
			}
			seq = lookupSeqFold(aux.Map.Spec, opts, fold)
		}
		if seq == nil || size+len(seq)-1 > isa.MaxInstructions {
			continue
		}
		size += len(seq) - 1
		rs = append(rs, Replacement{pc, seq})
	}
	if len(rs) == 0 {
		return 0, nil
	}
	if err := p.PatchAll(rs); err != nil {
		if errors.Is(err, ErrJumpRange) {
			return 0, nil
		}
		return 0, err
	}
	return len(rs), nil
}

// lookupSeq returns the inline lookup for a map, or nil when the call stays.
func lookupSeq(s maps.Spec, opts InlineOptions) []isa.Instruction {
	return lookupSeqFold(s, opts, 0)
}

// lookupSeqFold is lookupSeq with the header fields folded into constants
// when fold is set (seq.fold).
func lookupSeqFold(s maps.Spec, opts InlineOptions, fold int) []isa.Instruction {
	q := &seq{fold: fold}
	switch s.Type {
	case maps.Array:
		return arrayLookup(q, s)
	case maps.PerCPUArray:
		if opts.Interpreter {
			return nil
		}
		return perCPUArrayLookup(q, s)
	case maps.ArrayOfMaps:
		return arrayOfMapsLookup(q, s)
	case maps.Hash, maps.PerCPUHash, maps.LRUHash, maps.LRUPerCPUHash, maps.HashOfMaps:
		if opts.Interpreter || s.KeySize == 0 || s.KeySize > maxInlineKey {
			return nil
		}
		return hashLookup(q, s)
	case maps.LPMTrie:
		if opts.Interpreter {
			return nil
		}
		return lpmLookup(q, s)
	}
	return nil
}

// arrayOfMapsLookup is the inline lookup of an array of maps: the inner
// map's handle from its slot (0 when empty), or 0 out of range. The slot is
// an aligned 8-byte word that Go writers set atomically; the inner map
// stays alive until no run can hold its handle (maps.Domain).
func arrayOfMapsLookup(q *seq, s maps.Spec) []isa.Instruction {
	if s.MaxEntries > 1<<31-1 {
		return nil
	}
	q.emit(ldx(isa.SizeW, isa.R0, isa.R2, 0))
	q.bind(boundsCheck(q, s.MaxEntries))
	q.field(isa.SizeDW, isa.R1, maps.ArrayOfMapsFieldBase)
	q.emit(
		aluK(isa.ALULsh, isa.R0, 3),
		aluX(isa.ALUAdd, isa.R0, isa.R1),
		tldx(isa.SizeDW, isa.R0, isa.R0, 0), // the slot: base + bounded index * 8
	)
	return q.done()
}

// arrayLookup is the inline lookup of an array map: r0 = base + index *
// stride, or 0 when the index is out of range.
func arrayLookup(q *seq, s maps.Spec) []isa.Instruction {
	stride := (uint64(s.ValueSize) + 7) &^ 7
	// An inner-map template with BPF_F_INNER_MAP stands for arrays of any
	// size: the bound is not a constant (the kernel does not inline these
	// either).
	if s.MaxEntries > 1<<31-1 || stride > 1<<31-1 || s.Flags&maps.FlagInnerMap != 0 {
		return nil
	}
	// r1 = value base, from the map header.
	q.field(isa.SizeDW, isa.R1, maps.ArrayFieldBase)
	// r0 = index
	q.emit(ldx(isa.SizeW, isa.R0, isa.R2, 0))
	hit := boundsCheck(q, s.MaxEntries)
	q.bind(hit)
	q.emit(scale(isa.R0, stride), aluX(isa.ALUAdd, isa.R0, isa.R1))
	return q.done()
}

// boundsCheck emits the bounds check of the index in r0 and the miss path
// (r0 = 0, leave) and returns the label to bind where the hit path starts.
// The hit path ends the sequence, so a hit takes one jump and runs
// straight out.
func boundsCheck(q *seq, maxEntries uint32) label {
	hit := q.newLabel()
	q.jump(jmpK(isa.JumpLT, isa.R0, int32(maxEntries)), hit)
	q.emit(aluK(isa.ALUMov, isa.R0, 0))
	q.jump(ja, out)
	return hit
}

// perCPUArrayLookup is the inline lookup of a per-CPU array: r0 = base +
// cpu * area stride + index * value size (the map's per-CPU areas,
// maps/array.go). The area stride comes from the header.
func perCPUArrayLookup(q *seq, s maps.Spec) []isa.Instruction {
	vsize := (uint64(s.ValueSize) + 7) &^ 7
	if s.MaxEntries > 1<<31-1 || vsize > 1<<31-1 || s.Flags&maps.FlagInnerMap != 0 {
		return nil
	}
	q.emit(ldx(isa.SizeW, isa.R0, isa.R2, 0))
	q.bind(boundsCheck(q, s.MaxEntries))
	q.emit(scale(isa.R0, vsize))
	q.field(isa.SizeDW, isa.R3, maps.ArrayFieldBase)
	q.emit(aluX(isa.ALUAdd, isa.R0, isa.R3))
	q.field(isa.SizeDW, isa.R4, maps.ArrayFieldStride)
	q.emit(
		isa.Instruction{Op: isa.OpCPUIndex, Dst: isa.R3},
		aluX(isa.ALUMul, isa.R3, isa.R4),
		aluX(isa.ALUAdd, isa.R0, isa.R3),
	)
	return q.done()
}
