package rewrite

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

// lpmLookup is the inline lookup of an LPM trie whose keys have 1, 2 or
// 4 bytes of data (IPv4 addresses and shorter), the same walk as the
// lock-free Go lookup's one-word path (maps/lpm.go: lpmTrie.lookup),
// which the differential tests hold it to. With s = 63 - prefixlen (a
// node's prefix length is at most 32, so 63 ^ plen), the key's data k in
// the top bits of a word, and a node's data d in the same form:
//
//	      r5 = root (through its address, a header field)
//	      r3 = 63 - key prefixlen; r4 = k; r0 = 0 (the longest match so far)
//	      if key prefixlen > max: leave with 0
//	loop: if r5 == 0 goto done
//	      r1 = 63 ^ node.prefixlen
//	      if r1 < r3 goto done             the node's prefix is longer than the key's
//	      if ((d ^ k) >> 1) >> r1 != 0 goto done   its prefix differs
//	      if r1 == 63 - max goto exact     a full-length match
//	      if !node.im: r0 = r5
//	      r5 = node.child[(k >> r1) & 1]; goto loop
//	exact: r0 = r5
//	done: if r0 != 0: r0 = node.value (the value's address)
//
// Memory order is the hash lookup's (inline_hash.go): writers publish a
// complete node with an atomic store of the link to it, nodes are reused
// only after every run that could see them has ended (maps.Domain), and
// each node load uses the address its link load produced. A node's
// prefix, data and value address never change while it is linked; its
// intermediate flag may be set in place (a deleted element with two
// children), which the walk reads either way, as the Go one.
func lpmLookup(q *seq, s maps.Spec) []isa.Instruction {
	data := s.KeySize - 4
	var size uint8
	switch data {
	case 1:
		size = isa.SizeB
	case 2:
		size = isa.SizeH
	case 4:
		size = isa.SizeW
	default:
		return nil
	}
	maxLen := int32(8 * data)
	loop, done, exact, skip := q.newLabel(), q.newLabel(), q.newLabel(), q.newLabel()
	q.field(isa.SizeDW, isa.R5, maps.LPMFieldRootAddr)
	q.emit(
		tldx(isa.SizeDW, isa.R5, isa.R5, 0), // the root
		ldx(isa.SizeW, isa.R3, isa.R2, 0),   // the key's prefix length
		ldx(size, isa.R4, isa.R2, 4),        // its data, in network order
	)
	if data > 1 {
		q.emit(isa.Instruction{Op: isa.ClassALU | isa.ALUEnd | isa.EndToBE, Dst: isa.R4, Imm: int32(8 * data)})
	}
	q.emit(
		aluK(isa.ALULsh, isa.R4, 64-maxLen),
		aluK(isa.ALUMov, isa.R0, 0),
	)
	q.jump(jmpK(isa.JumpGT, isa.R3, maxLen), out)
	q.emit(
		aluK(isa.ALUXor, isa.R3, 63), // 63 - prefixlen, as prefixlen <= 32
	)
	q.bind(loop)
	q.jump(jmpK(isa.JumpEQ, isa.R5, 0), done)
	q.emit(
		tldx(isa.SizeW, isa.R1, isa.R5, maps.LPMNodePrefixLen),
		aluK(isa.ALUXor, isa.R1, 63),
	)
	q.jump(jmpX(isa.JumpLT, isa.R1, isa.R3), done)
	q.emit(
		tldx(isa.SizeDW, isa.R2, isa.R5, maps.LPMNodeData),
		isa.Instruction{Op: isa.ClassALU | isa.ALUEnd | isa.EndToBE, Dst: isa.R2, Imm: 64},
		aluX(isa.ALUXor, isa.R2, isa.R4),
		aluK(isa.ALURsh, isa.R2, 1),
		aluX(isa.ALURsh, isa.R2, isa.R1),
	)
	q.jump(jmpK(isa.JumpNE, isa.R2, 0), done)
	q.jump(jmpK(isa.JumpEQ, isa.R1, 63-maxLen), exact)
	q.emit(
		tldx(isa.SizeW, isa.R2, isa.R5, maps.LPMNodeFlags),
		aluK(isa.ALUAnd, isa.R2, maps.LPMNodeIM),
	)
	q.jump(jmpK(isa.JumpNE, isa.R2, 0), skip)
	q.emit(aluX(isa.ALUMov, isa.R0, isa.R5))
	q.bind(skip)
	q.emit(
		aluX(isa.ALUMov, isa.R2, isa.R4),
		aluX(isa.ALURsh, isa.R2, isa.R1),
		aluK(isa.ALUAnd, isa.R2, 1),
		aluK(isa.ALULsh, isa.R2, 3),
		aluX(isa.ALUAdd, isa.R2, isa.R5),
		tldx(isa.SizeDW, isa.R5, isa.R2, maps.LPMNodeChild0),
	)
	q.jump(ja, loop)
	q.bind(exact)
	q.emit(aluX(isa.ALUMov, isa.R0, isa.R5))
	q.bind(done)
	q.jump(jmpK(isa.JumpEQ, isa.R0, 0), out)
	q.emit(tldx(isa.SizeDW, isa.R0, isa.R0, maps.LPMNodeValue))
	return q.done()
}
