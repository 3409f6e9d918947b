//go:build amd64 && linux

package amd64

import "github.com/bpfvm/bpfvm/isa"

// A bpf-to-bpf call must preserve R6-R9 for the caller. The caller saves
// them around the call (the callee could not: callx, Program.Call and
// checked-mode programs may enter code anywhere), but only those the
// callee can write: the instructions control can reach from the callee's
// entry without entering another call are found by a flood fill that
// follows jumps as they are encoded, so it holds for unverified programs
// too, whose jumps may leave the function.

// frameWork bounds the instructions the flood fills of one compilation
// visit; past it calls save every register, as they otherwise would.
const frameWork = 1 << 20

// calleeSaves returns the registers among R6-R9 (as x86 registers) that a
// call of the function at entry must save.
func (c *compiler) calleeSaves(entry int) []int {
	all := []int{regMap[6], regMap[7], regMap[8], regMap[9]}
	if c.saves == nil {
		c.saves = map[int][]int{}
	}
	if s, ok := c.saves[entry]; ok {
		return s
	}
	mask, ok := c.writtenFrom(entry)
	s := all
	if ok {
		s = nil
		for r := isa.R6; r <= isa.R9; r++ {
			if mask&(1<<r) != 0 {
				s = append(s, regMap[r])
			}
		}
	}
	c.saves[entry] = s
	return s
}

// writtenFrom returns the mask of BPF registers that instructions reachable
// from entry (not entering calls) write, or false when the work bound is
// reached.
func (c *compiler) writtenFrom(entry int) (uint16, bool) {
	in, ok := c.region(entry)
	if !ok {
		return 0, false
	}
	var mask uint16
	for _, pc := range in {
		ins := c.prog[pc]
		switch ins.Class() {
		case isa.ClassALU, isa.ClassALU64, isa.ClassLDX:
			mask |= 1 << ins.Dst
		case isa.ClassLD:
			mask |= 1<<ins.Dst | 1<<isa.R0
		case isa.ClassSTX:
			if ins.Op&0xe0 != isa.ModeMEM {
				mask |= 1<<ins.Dst | 1<<ins.Src | 1<<isa.R0
			}
		}
	}
	return mask, true
}

// region returns the instructions control can reach from entry without
// entering calls, following jumps as encoded, or false when the work bound
// (frameWork) is reached. Visits are stamped in one array per compilation,
// so many regions cost their size, not the program's.
func (c *compiler) region(entry int) ([]int, bool) {
	n := len(c.prog)
	if c.stamp == nil {
		c.stamp = make([]uint32, n)
	}
	c.gen++
	var in []int
	stack := []int{entry}
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if pc < 0 || pc >= n || c.stamp[pc] == c.gen || c.second[pc] {
			continue
		}
		if c.frameWork++; c.frameWork > frameWork {
			return nil, false
		}
		c.stamp[pc] = c.gen
		in = append(in, pc)
		for _, s := range c.succs(pc) {
			if s >= 0 {
				stack = append(stack, s)
			}
		}
	}
	return in, true
}

// succs returns the instructions that can follow pc (-1: none), calls
// falling through.
func (c *compiler) succs(pc int) [2]int {
	ins := c.prog[pc]
	switch {
	case ins.IsLdImm64():
		return [2]int{pc + 2, -1}
	case ins.Op == isa.OpExit:
		return [2]int{-1, -1}
	}
	succ := [2]int{pc + 1, -1}
	if t, ok := ins.JumpTarget(pc); ok {
		succ[1] = t
		if ins.Op&0xf0 == isa.JumpA {
			succ[0] = -1
		}
	}
	return succ
}
