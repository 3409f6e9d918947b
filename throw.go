package bpfvm

import (
	"slices"

	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
)

// withCatchMarker appends to a program a reference to its exception
// callback at cb: `r0 = subprog[cb] ll; exit`, after the last function,
// where no path reaches it. The rewrites keep it pointing at the callback
// as they move instructions, and the engines take its target for a
// function entry (the JIT compiles the callback as one); catchEntry reads
// it back once the program is final.
func withCatchMarker(insns []isa.Instruction, cb int) []isa.Instruction {
	n := len(insns)
	ld := isa.LdImm64(isa.R0, isa.PseudoFunc, 0)
	ld[0].Imm = int32(cb - (n + 1))
	out := make([]isa.Instruction, 0, n+3)
	out = append(out, insns...)
	return append(out, ld[0], ld[1], isa.Instruction{Op: isa.OpExit})
}

// catchEntry returns what the runner needs to catch bpf_throw in a final
// program: the exception callback the marker of withCatchMarker names, as
// the engines' callback value, or none (the cookie is the result).
func catchEntry(insns []isa.Instruction, funcs []verifier.FuncInfo) runner.Catch {
	c := runner.Catch{Throws: slices.ContainsFunc(insns, isThrow)}
	if _, ok := verifier.ExceptionCallback(funcs); !ok || len(insns) < 3 {
		return c
	}
	if ld := insns[len(insns)-3]; ld.IsPseudoFunc() {
		c.Callback, c.HasCallback = interp.FuncValue(len(insns)-3+1+int(ld.Imm)), true
	}
	return c
}

// isThrow reports whether ins calls bpf_throw.
func isThrow(ins isa.Instruction) bool {
	return ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) && ins.Imm == isa.KfuncThrow
}

// programArena returns the arena among a program's maps, nil for none
// (the verifier allows one).
func programArena(ms []*Map) *maps.ArenaMap {
	for _, m := range ms {
		if a, ok := m.m.(*maps.ArenaMap); ok {
			return a
		}
	}
	return nil
}

// keepAddrSpaceCasts puts back the offset of address space casts (ALU64
// MOV X with offset isa.AddrSpaceCast), which cilium/ebpf's encoder
// clears: it keeps an ALU instruction's offset only for the operations it
// knows (sdiv, smod, movsx).
func keepAddrSpaceCasts(insns asm.Instructions, prog []isa.Instruction) {
	pc := 0
	for i := range insns {
		ins := &insns[i]
		if ins.OpCode == asm.Mov.Op(asm.RegSource) && ins.Offset == isa.AddrSpaceCast && pc < len(prog) {
			prog[pc].Off = isa.AddrSpaceCast
		}
		pc += int(ins.Size() / asm.InstructionSize)
	}
}

// arenaBase and arenaUser are the JIT's constants of a program's arena
// (amd64.Options.Arena), 0 without one.
func arenaBase(ms []*Map) uint64 {
	if a := programArena(ms); a != nil {
		return a.Base()
	}
	return 0
}

func arenaUser(ms []*Map) uint64 {
	if a := programArena(ms); a != nil {
		return a.UserStart() &^ 0xffff_ffff
	}
	return 0
}
