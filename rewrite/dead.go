package rewrite

import "github.com/bpfvm/bpfvm/isa"

// SanitizeDeadCode makes the code the verifier never reached unreachable at
// run time, from the aux facts (InsnAux.Seen), as the kernel does after
// verification: every instruction not seen becomes isa.OpDead, which stops
// the run with vm.ErrDeadCode (the kernel's sanitize_dead_code puts a jump
// to itself there), so a branch the verifier proved never taken cannot run
// code whose safety nobody checked, say through a NULL check the verifier
// elided. For privileged programs conditional jumps with a side never
// taken are also hard-wired, as opt_hard_wire_dead_code_branches: to goto
// when the fall-through was never reached, to a goto +0 when the target
// was never. (The kernel then removes the dead code and those nops; here
// they stay, so instruction indexes keep matching the verifier's.) It
// returns the number of instructions made dead and of jumps hard-wired.
//
// It changes no instruction's length and must run before any patch, while
// every instruction's aux is its own.
func SanitizeDeadCode(p *Program, privileged bool) (dead, wired int) {
	n := len(p.Insns)
	for pc := 0; pc < n; pc++ {
		ins := p.Insns[pc]
		ld := ins.IsLdImm64()
		if !p.Aux[pc].Seen {
			p.Insns[pc] = isa.Instruction{Op: isa.OpDead}
			dead++
			if ld && pc+1 < n {
				pc++
				p.Insns[pc] = isa.Instruction{Op: isa.OpDead}
				dead++
			}
			continue
		}
		if ld {
			pc++
			continue
		}
		if !privileged || !isCondJump(ins) {
			continue
		}
		t := pc + 1 + int(ins.Off)
		switch {
		case pc+1 < n && !p.Aux[pc+1].Seen:
			p.Insns[pc] = isa.Instruction{Op: isa.OpJA, Off: ins.Off}
		case t >= 0 && t < n && !p.Aux[t].Seen:
			p.Insns[pc] = isa.Instruction{Op: isa.OpJA}
		default:
			continue
		}
		wired++
	}
	return dead, wired
}

// isCondJump reports whether ins is a conditional jump of the ISA: a JMP or
// JMP32 that is not goto, call, exit or may_goto.
func isCondJump(ins isa.Instruction) bool {
	class := ins.Class()
	if class != isa.ClassJMP && class != isa.ClassJMP32 {
		return false
	}
	switch ins.Op & 0xf0 {
	case isa.JumpA, isa.JumpCall, isa.JumpExit, isa.JumpCond:
		return false
	}
	return true
}
