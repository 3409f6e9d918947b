package rewrite

import (
	"github.com/bpfvm/bpfvm/isa"
)

// GraphArgs passes graph kfunc calls what the kernel's fixup_kfunc_call
// passes them (verifier.InsnAux.Graph): bpf_obj_new_impl's R1, the
// program's BTF type id, becomes the handle of the object's type
// (maps.RegisterObjType), and the node offset of bpf_list_push_*_impl (R4)
// and bpf_rbtree_add_impl (R5) is set, each just before the call. It
// returns how many calls it changed.
func GraphArgs(p *Program) (int, error) {
	var rs []Replacement
	for pc := 0; pc < len(p.Insns); pc++ {
		ins := p.Insns[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallKfunc) || p.Aux[pc].Graph == nil {
			continue
		}
		g := p.Aux[pc].Graph
		var seq []isa.Instruction
		switch ins.Imm {
		case isa.KfuncObjNew:
			ld := isa.LdImm64(isa.R1, 0, g.ObjType)
			seq = []isa.Instruction{ld[0], ld[1], ins}
		case isa.KfuncListPushFront, isa.KfuncListPushBack:
			seq = []isa.Instruction{{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R4, Imm: g.NodeOff}, ins}
		case isa.KfuncRbtreeAdd:
			seq = []isa.Instruction{{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R5, Imm: g.NodeOff}, ins}
		default:
			continue
		}
		rs = append(rs, Replacement{PC: pc, Seq: seq})
	}
	if len(rs) == 0 {
		return 0, nil
	}
	return len(rs), p.PatchAll(rs)
}
