package rewrite

import (
	"fmt"
	"slices"
	"time"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// DefaultMayGotoBudget is how long a frame's may_goto loops may run before
// may_goto starts jumping, as the kernel's timed may_goto allows.
const DefaultMayGotoBudget = 250 * time.Millisecond

// ExpandMayGoto replaces every may_goto with the timed form the engines
// implement (isa.OpMayGotoTimed, with budget in its immediate) and makes
// each function that holds one start by initialising its frame's hidden
// may_goto slots (vm.MayGotoCount = 1, vm.MayGotoStart = 0), as the
// kernel's fixup gives such frames extra stack and a prologue. Jumps to a
// function's first instruction keep landing on it, after the prologue;
// calls and function references land on the prologue. It returns the
// number of may_goto instructions replaced.
func ExpandMayGoto(p *Program, budget time.Duration) (int, error) {
	us := budget.Microseconds()
	if us < 1 {
		us = 1
	}
	if us > 1<<31-1 {
		return 0, fmt.Errorf("rewrite: may_goto budget %v too long", budget)
	}
	entries := functionEntries(p.Insns)
	var users []int // entries of functions using may_goto
	n := 0
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := &p.Insns[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Op != isa.OpMayGoto {
			continue
		}
		ins.Op, ins.Imm = isa.OpMayGotoTimed, int32(us)
		n++
		i, _ := slices.BinarySearch(entries, pc+1)
		if e := entries[i-1]; !slices.Contains(users, e) {
			users = append(users, e)
		}
	}
	// From the last function to the first, so that insertions do not move
	// the entries still to do.
	slices.Sort(users)
	for i := len(users) - 1; i >= 0; i-- {
		err := p.insertPrologue(users[i], []isa.Instruction{
			{Op: isa.ClassST | isa.ModeMEM | isa.SizeDW, Dst: isa.R10, Off: vm.MayGotoCount, Imm: vm.MayGotoRefill},
			{Op: isa.ClassST | isa.ModeMEM | isa.SizeDW, Dst: isa.R10, Off: vm.MayGotoStart, Imm: 0},
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// functionEntries returns the sorted first instructions of the program's
// functions: 0 and every target of a bpf-to-bpf call or function reference.
func functionEntries(insns []isa.Instruction) []int {
	entries := []int{0}
	for pc := 0; pc < len(insns); pc++ {
		ins := insns[pc]
		if ins.IsLocalCall() || ins.IsPseudoFunc() {
			entries = append(entries, pc+1+int(ins.Imm))
		}
		if ins.IsLdImm64() {
			pc++
		}
	}
	slices.Sort(entries)
	return slices.Compact(entries)
}

// insertPrologue inserts seq (no jumps of its own) before the instruction
// at pc, the first of a function: calls and function references to pc then
// enter seq, jumps to pc still go to the instruction.
func (p *Program) insertPrologue(pc int, seq []isa.Instruction) error {
	k := len(seq)
	for i := 0; i < len(p.Insns); i++ {
		ins := &p.Insns[i]
		call := ins.IsLocalCall() || ins.IsPseudoFunc()
		var target int
		switch {
		case call:
			target = i + 1 + int(ins.Imm)
		default:
			t, ok := ins.JumpTarget(i)
			if !ok {
				if ins.IsLdImm64() {
					i++
				}
				continue
			}
			target = t
		}
		newI, newT := i, target
		if i >= pc {
			newI += k
		}
		if target > pc || target == pc && !call {
			newT += k
		}
		off := newT - newI - 1
		if call || ins.Op == isa.OpJA32 {
			ins.Imm = int32(off)
		} else {
			if off < -1<<15 || off >= 1<<15 {
				return fmt.Errorf("rewrite: jump at %d grows out of range", i)
			}
			ins.Off = int16(off)
		}
		if ins.IsLdImm64() {
			i++
		}
	}
	p.Insns = slices.Insert(p.Insns, pc, seq...)
	p.Aux = slices.Insert(p.Aux, pc, make([]verifier.InsnAux, k)...)
	orig := make([]int, k)
	for i := range orig {
		orig[i] = -1
	}
	p.Orig = slices.Insert(p.Orig, pc, orig...)
	// An instruction at pc starts the function: it is entered through
	// the prologue, where At keeps pointing.
	for o, at := range p.at {
		if at > pc {
			p.at[o] = at + k
		}
	}
	return nil
}
