// Package rewrite transforms programs before they run: it replaces
// instructions with sequences (the kernel's bpf_patch_insn_data), keeping
// jump and call offsets and the verifier's per-instruction facts aligned,
// and implements the rewrites built on that: making the code the verifier
// never reached unreachable, inlining map lookups, bpf_loop and
// bpf_iter_num_next in verified programs, and the timed may_goto in every
// program. A pass addresses an instruction it learnt about before an
// earlier patch only through Program.At.
package rewrite

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// Program is a program being rewritten with its per-instruction facts.
type Program struct {
	Insns []isa.Instruction
	Aux   []verifier.InsnAux
	// Orig maps each instruction to the index it had before rewriting, for
	// error messages and dumps (-1 for instructions a patch added).
	Orig []int
	// at is Orig's inverse: at[o] is where original instruction o now
	// starts (At); at[len] is the length.
	at []int
}

// At returns where the instruction that had index orig before rewriting now
// starts: the first instruction of the sequence that replaced it, or of the
// prologue inserted before it when it starts a function (where calls to it
// enter). Rewrites address instructions they learnt about before an earlier
// patch (the verifier's facts, such as a loop's callback) only through At:
// an index taken before a patch is stale after it. ok is false for an index
// outside the original program.
func (p *Program) At(orig int) (pc int, ok bool) {
	if orig < 0 || orig >= len(p.at)-1 {
		return -1, false
	}
	return p.at[orig], true
}

// New starts rewriting insns; aux must have one entry per instruction.
func New(insns []isa.Instruction, aux []verifier.InsnAux) (*Program, error) {
	if len(aux) != len(insns) {
		return nil, fmt.Errorf("rewrite: %d aux entries for %d instructions", len(aux), len(insns))
	}
	p := &Program{
		Insns: append([]isa.Instruction(nil), insns...),
		Aux:   append([]verifier.InsnAux(nil), aux...),
		Orig:  make([]int, len(insns)),
		at:    make([]int, len(insns)+1),
	}
	for i := range p.Orig {
		p.Orig[i] = i
	}
	for i := range p.at {
		p.at[i] = i
	}
	return p, nil
}

// ErrJumpRange is returned when a patch would move a jump's target beyond
// the 16-bit offset of the jump: the program is left unchanged, and the
// rewrite may do without the patch (the kernel fails the load instead).
var ErrJumpRange = errors.New("rewrite: jump grows out of range")

// Replacement is a patch: the single instruction at PC becomes Seq.
type Replacement struct {
	PC  int
	Seq []isa.Instruction
}

// Patch replaces the single instruction at pc with seq; see PatchAll.
func (p *Program) Patch(pc int, seq []isa.Instruction) error {
	return p.PatchAll([]Replacement{{pc, seq}})
}

// PatchAll applies the replacements in one pass over the program, each
// instruction replaced by its sequence. Jumps and calls elsewhere in the
// program are adjusted, so that a jump to a replaced instruction now lands
// on the first instruction of its sequence and a jump past it still lands
// where it did. Offsets inside a sequence are relative to it, and its jumps
// must stay inside it or leave it only to the instruction after it. The aux
// entry of a replaced instruction goes to every instruction of its sequence
// (they act on its behalf). On error the program is unchanged.
func (p *Program) PatchAll(rs []Replacement) error {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Replacement) int { return a.PC - b.PC })
	n := len(p.Insns)
	for i, r := range rs {
		if r.PC < 0 || r.PC >= n || len(r.Seq) == 0 || i > 0 && rs[i-1].PC == r.PC {
			return fmt.Errorf("rewrite: patch of %d instructions at %d", len(r.Seq), r.PC)
		}
		if p.Insns[r.PC].IsLdImm64() || r.PC > 0 && p.Insns[r.PC-1].IsLdImm64() {
			return fmt.Errorf("rewrite: insn %d: cannot patch ld_imm64", r.PC)
		}
	}
	// at[i] is where old instruction i starts after patching; at[n] is the
	// new length.
	at := make([]int, n+1)
	delta, j := 0, 0
	for i := 0; i <= n; i++ {
		at[i] = i + delta
		if j < len(rs) && rs[j].PC == i {
			delta += len(rs[j].Seq) - 1
			j++
		}
	}
	insns := make([]isa.Instruction, 0, at[n])
	aux := make([]verifier.InsnAux, 0, at[n])
	orig := make([]int, 0, at[n])
	j = 0
	for i := 0; i < n; i++ {
		if j < len(rs) && rs[j].PC == i {
			for k, ins := range rs[j].Seq {
				insns = append(insns, ins)
				aux = append(aux, p.Aux[i])
				if k == 0 {
					orig = append(orig, p.Orig[i])
				} else {
					orig = append(orig, -1)
				}
			}
			j++
			continue
		}
		ins := p.Insns[i]
		aux = append(aux, p.Aux[i])
		orig = append(orig, p.Orig[i])
		var target int
		call := ins.IsLocalCall() || ins.IsPseudoFunc()
		if call {
			target = i + 1 + int(ins.Imm)
		} else if t, ok := ins.JumpTarget(i); ok {
			target = t
		} else {
			target = -1
		}
		if target >= 0 {
			off := at[target] - at[i] - 1
			if call || ins.Op == isa.OpJA32 {
				ins.Imm = int32(off)
			} else {
				if off < -1<<15 || off >= 1<<15 {
					return fmt.Errorf("insn %d: %w", i, ErrJumpRange)
				}
				ins.Off = int16(off)
			}
		}
		insns = append(insns, ins)
		if ins.IsLdImm64() {
			// The second slot: a function reference's offset counts
			// from after it, as computed above from i.
			insns = append(insns, p.Insns[i+1])
			aux = append(aux, p.Aux[i+1])
			orig = append(orig, p.Orig[i+1])
			i++
		}
	}
	p.Insns, p.Aux, p.Orig = insns, aux, orig
	for o, pc := range p.at {
		p.at[o] = at[pc]
	}
	return nil
}
