package verifier

import (
	"fmt"
	"sort"

	"github.com/bpfvm/bpfvm/isa"
)

// subprog is a function of the program: the entry or a bpf-to-bpf callee.
type subprog struct {
	Start, End int // [Start, End) instruction slots
	// StackDepth is the deepest stack offset the function touches, rounded
	// to 8 bytes; the kernel reports it as "stack depth".
	StackDepth int
	// Callback is set for functions passed to helpers by PseudoFunc loads.
	Callback bool
}

// findSubprogs splits the program into functions at call targets.
func findSubprogs(insns []isa.Instruction) []subprog {
	starts := map[int]bool{0: true}
	for pc, ins := range insns {
		if ins.IsLocalCall() || ins.IsPseudoFunc() {
			starts[pc+1+int(ins.Imm)] = true
		}
	}
	var s []int
	for pc := range starts {
		s = append(s, pc)
	}
	sort.Ints(s)
	subs := make([]subprog, len(s))
	for i, start := range s {
		end := len(insns)
		if i+1 < len(s) {
			end = s[i+1]
		}
		subs[i] = subprog{Start: start, End: end}
	}
	for pc, ins := range insns {
		if ins.IsPseudoFunc() {
			subs[subprogAt(subs, pc+1+int(ins.Imm))].Callback = true
		}
	}
	return subs
}

// subprogAt returns the index of the function containing pc.
func subprogAt(subs []subprog, pc int) int {
	return sort.Search(len(subs), func(i int) bool { return subs[i].Start > pc }) - 1
}

// checkCFG checks the control-flow graph as the kernel's check_cfg does:
// every function ends in exit or an unconditional jump, jumps stay inside
// their function, every instruction is reachable, and (until bounded loops
// are supported) there are no back-edges.
func checkCFG(insns []isa.Instruction, subs []subprog, allowLoops bool) error {
	n := len(insns)
	for _, s := range subs {
		last := s.End - 1
		if last > s.Start && insns[last-1].IsLdImm64() {
			last--
		}
		if op := insns[last].Op; op != isa.OpExit && op != isa.OpJA && op != isa.OpJA32 {
			return &Error{Insn: last, Msg: fmt.Sprintf("last insn is not an exit or jmp")}
		}
		for pc := s.Start; pc < s.End; pc++ {
			ins := insns[pc]
			if t, ok := ins.JumpTarget(pc); ok && (t < s.Start || t >= s.End) {
				return &Error{Insn: pc, Msg: fmt.Sprintf("jump out of range from insn %d to %d", pc, t)}
			}
			if ins.IsLdImm64() {
				pc++
			}
		}
	}

	// Iterative depth-first search with the kernel's colouring: a jump to
	// an instruction still on the DFS stack is a back-edge.
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, n)
	type frame struct{ pc, next int }
	var stack []frame
	for _, s := range subs {
		if color[s.Start] != white {
			continue
		}
		color[s.Start] = grey
		stack = append(stack[:0], frame{pc: s.Start})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			a, b := successors(insns, top.pc)
			t := -1
			for t < 0 && top.next < 2 {
				t = [2]int{a, b}[top.next]
				top.next++
			}
			if t < 0 {
				color[top.pc] = black
				stack = stack[:len(stack)-1]
				continue
			}
			switch color[t] {
			case white:
				color[t] = grey
				stack = append(stack, frame{pc: t})
			case grey:
				if !allowLoops {
					return &Error{Insn: top.pc, Msg: fmt.Sprintf("back-edge from insn %d to %d", top.pc, t)}
				}
			}
		}
	}
	for pc := 0; pc < n; pc++ {
		if color[pc] == white {
			return &Error{Insn: pc, Msg: fmt.Sprintf("unreachable insn %d", pc)}
		}
		if insns[pc].IsLdImm64() {
			pc++
		}
	}
	return nil
}
