package verifier

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

// Arenas (BPF_MAP_TYPE_ARENA): memory a program shares with user space,
// which it addresses with pointers of address space 1 (user addresses)
// and, once cast to address space 0 (addr_space_cast), with PtrToArena
// registers: 32-bit offsets into the arena's window that loads and stores
// may use at any offset (the kernel's BPF_PROBE_MEM32 accesses, which
// cannot touch anything but the arena). Arithmetic on them is 32-bit and
// keeps them arena pointers; they compare as scalars. A program uses one
// arena at most, the one it references; its kfuncs
// bpf_arena_alloc_pages and bpf_arena_free_pages take it and return
// scalars (user addresses); they are sleepable, as in the kernel.

// checkArenaMap applies the kernel's check_map_prog_compatibility rules
// for arenas to a map the program references: one arena per program,
// only for privileged loads.
func (v *verifier) checkArenaMap(pc int, idx int32) error {
	m := &v.opts.Maps[idx]
	if m.Spec.Type != maps.Arena {
		return nil
	}
	if v.arena != nil && v.arena.Index != m.Index {
		return v.errorf(pc, "Only one arena per program")
	}
	if v.opts.Unprivileged {
		return v.errorf(pc, "CAP_BPF and CAP_PERFMON are required to use arena")
	}
	v.arena = m
	return nil
}

// addrSpaceCast verifies an address space cast (check_alu_op): to the
// kernel's space it gives an arena pointer, to the user's a scalar.
func (v *verifier) addrSpaceCast(pc int, ins isa.Instruction) error {
	if ins.Imm != isa.CastToKernel && ins.Imm != isa.CastToUser {
		return v.errorf(pc, "addr_space_cast insn can only convert between address space 1 and 0")
	}
	if v.arena == nil {
		return v.errorf(pc, "addr_space_cast insn can only be used in a program that has an associated arena")
	}
	if _, err := v.readReg(pc, ins.Src); err != nil {
		return err
	}
	if err := v.checkWriteReg(pc, ins.Dst); err != nil {
		return err
	}
	dst := &v.cur.cur().Regs[ins.Dst]
	if ins.Imm == isa.CastToKernel {
		*dst = Reg{Type: PtrToArena, Scalar: Const(0)}
	} else {
		*dst = unknownScalar()
	}
	return nil
}

// arenaALU is arithmetic on an arena pointer: any operation, the result
// still an arena pointer (adjust_reg_min_max_vals), of 32 bits as the
// engines use its low half.
func (v *verifier) arenaALU(pc int, ins isa.Instruction, dst *Reg) error {
	if ins.Class() == isa.ClassALU64 {
		v.aux[pc].ArenaZext = true
	}
	*dst = Reg{Type: PtrToArena, Scalar: Const(0)}
	return nil
}

// arenaKfunc verifies bpf_arena_alloc_pages(map, addr, n, node, flags)
// and bpf_arena_free_pages(map, ptr, n): the map an arena (the kernel
// takes any map pointer as its void *p__map and the kfuncs do nothing
// for another), the rest scalars; both give scalars in R0.
func (v *verifier) arenaKfunc(pc int, id int32) error {
	// KF_SLEEPABLE in kernel 6.18: sleepable programs only (syscall
	// programs, sleepable iterators ...), outside RCU and preemption
	// sections.
	if !v.sleepable {
		return v.errorf(pc, "program must be sleepable to call sleepable kfunc %s", isa.KfuncName(id))
	}
	nargs := 5
	if id == isa.KfuncArenaFree {
		nargs = 3
	}
	f := v.cur.cur()
	for r := isa.R1; r <= isa.Register(nargs); r++ {
		reg, err := v.readReg(pc, r)
		if err != nil {
			return err
		}
		switch {
		case r == isa.R1:
			if reg.Type != ConstPtrToMap {
				return v.errorf(pc, "arg#0 expected pointer to a map, but got %s", regTypeString(reg))
			}
		case r == isa.R2:
			// __ign: anything, a pointer or not.
		case reg.Type != ScalarValue:
			return v.errorf(pc, "R%d is not a scalar", r)
		}
	}
	if err := v.sleepInSection(pc, isa.KfuncName(id)); err != nil {
		return err
	}
	clearCallerSaved(f)
	if id == isa.KfuncArenaFree {
		f.Regs[0] = Reg{Type: NotInit}
	} else {
		f.Regs[0] = unknownScalar()
	}
	return nil
}

// arenaAccess is a load or store through an arena pointer: any offset,
// any size, a load giving an unknown scalar (check_mem_access). The
// engines lower plain loads and stores only (isa.ModeArena): atomics and
// sign-extending loads are not supported yet.
func (v *verifier) arenaAccess(ptr *Reg, a access) (Reg, error) {
	ins := v.insns[a.pc]
	if ins.Class() == isa.ClassSTX && ins.Op&0xe0 == isa.ModeATOMIC {
		return Reg{}, v.errorf(a.pc, "BPF_ATOMIC on R%d %s is not supported by bpfvm yet", a.reg, regTypeString(ptr))
	}
	if a.signed {
		return Reg{}, v.errorf(a.pc, "sign-extending load through R%d %s is not supported by bpfvm yet", a.reg, regTypeString(ptr))
	}
	return v.loadedScalar(a.size), nil
}
