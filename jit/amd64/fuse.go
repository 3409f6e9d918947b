//go:build amd64 && linux

package amd64

import "github.com/bpfvm/bpfvm/isa"

// fuse emits clang's common two- and three-instruction idioms starting at
// pc as one machine instruction and returns how many BPF instructions it
// consumed (0: none). The idioms are
//
//	rX = rY; rX += imm             lea rX, [rY+imm]   (pointers to the stack)
//	rX = rY; rX <<= 32; rX >>= 32  mov eX, eY         (zero extension)
//	rX = rY; rX <<= 32; rX s>>= 32 movsxd rX, eY      (sign extension)
//
// and bpf_iter_num_next followed by its NULL check (iterNumNext).
//
// The instructions after the first must not start a block, so nothing
// jumps between them, and the budget charge of the block is unchanged.
func (c *compiler) fuse(pc int) int {
	p := c.prog
	ins := p[pc]
	within := func(k int) bool {
		if pc+k > len(p) {
			return false
		}
		for j := 1; j < k; j++ {
			if c.leader[pc+j] || c.second[pc+j] {
				return false
			}
		}
		return true
	}
	if ins.IsIterNumNext() && within(2) {
		// bpf_for's r0 = bpf_iter_num_next(r1); if r0 == 0 goto done.
		q := p[pc+1]
		if t := pc + 2 + int(q.Off); q.Op == isa.ClassJMP|isa.JumpEQ|isa.SrcK && q.Dst == isa.R0 && q.Src == 0 && q.Imm == 0 && t > pc+1 {
			c.iterNumNext(pc, c.pcL[t]) // loops.go
			return 2
		}
	}
	if ins.Op != isa.ClassALU64|isa.ALUMov|isa.SrcX || ins.Off != 0 || ins.Imm != 0 {
		return 0
	}
	x, y := ins.Dst, ins.Src
	is := func(j int, op uint8, imm int32) bool {
		q := p[pc+j]
		return q.Op == op && q.Dst == x && q.Src == 0 && q.Off == 0 && q.Imm == imm
	}
	const (
		lsh  = isa.ClassALU64 | isa.ALULsh | isa.SrcK
		rsh  = isa.ClassALU64 | isa.ALURsh | isa.SrcK
		arsh = isa.ClassALU64 | isa.ALUArsh | isa.SrcK
		add  = isa.ClassALU64 | isa.ALUAdd | isa.SrcK
	)
	switch {
	case within(3) && is(1, lsh, 32) && is(2, rsh, 32):
		c.a.movRR(4, regMap[x], regMap[y])
		return 3
	case within(3) && is(1, lsh, 32) && is(2, arsh, 32):
		c.a.movsxRR(8, 4, regMap[x], regMap[y])
		return 3
	case within(2) && !c.opts.Blind && is(1, add, p[pc+1].Imm):
		c.a.lea(regMap[x], mem{regMap[y], p[pc+1].Imm})
		return 2
	}
	return 0
}
