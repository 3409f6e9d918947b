//go:build amd64 && linux

package amd64

import "github.com/bpfvm/bpfvm/isa"

// Arena accesses (isa.ModeArena, the kernel's BPF_PROBE_MEM32): the
// address is the arena's window base plus the pointer register's low 32
// bits plus the offset, which always lands in the window (maps.ArenaMap),
// so no check is needed in either mode. rax and rdx are the scratch
// registers; the base is a constant of the program (Options.Arena).

// arenaBase puts a constant of the arena in rdx, blinded like any
// constant when Options.Blind says so (which clobbers rax: call it first).
func (c *compiler) arenaBase(v uint64) {
	if c.opts.Blind {
		c.blindImm64(rdx, v)
		return
	}
	c.a.movRI64(rdx, v)
}

// arenaAccess compiles a ModeArena load or store.
func (c *compiler) arenaAccess(ins isa.Instruction) {
	a := c.a
	size := isa.SizeBytes(ins.Op)
	ptr := ins.Src
	if ins.Class() != isa.ClassLDX {
		ptr = ins.Dst
	}
	c.arenaBase(c.opts.Arena)
	a.movRR(4, rax, regMap[ptr]) // the low 32 bits, zero-extended
	a.aluRR(8, aluAdd, rax, rdx)
	m := mem{rax, int32(ins.Off)}
	switch ins.Class() {
	case isa.ClassLDX:
		a.load(size, false, regMap[ins.Dst], m)
	case isa.ClassSTX:
		a.store(size, m, regMap[ins.Src])
	default:
		if c.opts.Blind {
			c.blindImm(rdx, ins.Imm)
			a.store(size, m, rdx)
			return
		}
		a.storeImm(size, m, ins.Imm)
	}
}

// addrSpaceCast compiles an address space cast the rewrite left: to the
// user's space, the upper half of the arena's user addresses above a
// non-zero low half, else 0; to the kernel's (unverified programs only),
// the low half.
func (c *compiler) addrSpaceCast(ins isa.Instruction) {
	a := c.a
	dst, src := regMap[ins.Dst], regMap[ins.Src]
	if ins.Imm != isa.CastToUser {
		a.movRR(4, dst, src)
		return
	}
	zero := a.newLabel()
	c.arenaBase(c.opts.ArenaUser)
	a.movRR(4, rax, src)
	a.testRR(4, rax, rax)
	a.jcc(ccE, zero)
	a.aluRR(8, aluOr, rax, rdx)
	a.bind(zero)
	a.movRR(8, dst, rax)
}
