//go:build amd64 && linux

package amd64

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// Arena accesses (isa.ModeArena, ModeArenaSX, ModeArenaAtomic: the
// kernel's BPF_PROBE_MEM32 and its relatives): the address is the arena's
// window base plus the pointer register's low 32 bits plus the offset,
// which always lands in the window (maps.ArenaMap), so no check of the
// checked mode is needed; the page table below the window
// (vm.ArenaTable) says whether the first and the last byte's pages are
// the arena's, else a load gives 0 and a store or an atomic does nothing.
// rax and rdx are the scratch registers; the base is a constant of the
// program (Options.Arena).

// arenaBase puts a constant of the arena in rdx, blinded like any
// constant when Options.Blind says so (which clobbers rax: call it first).
func (c *compiler) arenaBase(v uint64) {
	if c.opts.Blind {
		c.blindImm64(rdx, v)
		return
	}
	c.a.movRI64(rdx, v)
}

// arenaCheck jumps to unmapped unless the page holding byte off of the
// arena pointer in register ptr is the arena's; rdx holds the base, rax
// is clobbered.
func (c *compiler) arenaCheck(ptr int, off int32, unmapped label) {
	a := c.a
	a.movRR(4, rax, ptr) // the low 32 bits, zero-extended
	a.lea(rax, mem{rax, off})
	a.shiftRI(8, shSar, rax, vm.ArenaPageShift)
	a.aluRR(8, aluAdd, rax, rdx)
	a.load(1, false, rax, mem{rax, vm.ArenaTable})
	a.testRR(4, rax, rax)
	a.jcc(ccE, unmapped)
}

// arenaAccess compiles an arena load, store or atomic operation.
func (c *compiler) arenaAccess(ins isa.Instruction) {
	a := c.a
	size := isa.SizeBytes(ins.Op)
	class, mode := ins.Class(), ins.Op&0xe0
	ptr := ins.Src
	if class != isa.ClassLDX {
		ptr = ins.Dst
	}
	unmapped, done := a.newLabel(), a.newLabel()
	c.arenaBase(c.opts.Arena)
	c.arenaCheck(regMap[ptr], int32(ins.Off), unmapped)
	if size > 1 {
		c.arenaCheck(regMap[ptr], int32(ins.Off)+int32(size)-1, unmapped)
	}
	a.movRR(4, rax, regMap[ptr])
	a.aluRR(8, aluAdd, rax, rdx)
	m := mem{rax, int32(ins.Off)}
	switch {
	case class == isa.ClassLDX:
		a.load(size, mode == isa.ModeArenaSX, regMap[ins.Dst], m)
	case mode == isa.ModeArenaAtomic:
		// The operation needs rax and rdx: the address goes to a
		// register it does not use, saved around it.
		tmp := arenaTemp(ins)
		a.push(tmp)
		a.movRR(8, tmp, rax)
		c.atomicOp(ins, size, mem{tmp, int32(ins.Off)})
		a.pop(tmp)
	case class == isa.ClassSTX:
		a.store(size, m, regMap[ins.Src])
	default:
		if c.opts.Blind {
			c.blindImm(rdx, ins.Imm)
			a.store(size, m, rdx)
		} else {
			a.storeImm(size, m, ins.Imm)
		}
	}
	a.jmp(done)
	a.bind(unmapped)
	if class == isa.ClassLDX {
		a.aluRR(4, aluXor, regMap[ins.Dst], regMap[ins.Dst])
	}
	a.bind(done)
}

// arenaTemp is a register an arena atomic does not use: neither its
// pointer, its source nor R0 (cmpxchg's).
func arenaTemp(ins isa.Instruction) int {
	for _, r := range []isa.Register{isa.R6, isa.R7, isa.R8} {
		if r != ins.Dst && r != ins.Src {
			return regMap[r]
		}
	}
	return regMap[isa.R9]
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
