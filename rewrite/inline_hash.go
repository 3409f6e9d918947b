package rewrite

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
)

// hashLookup is the inline lookup of a hash, per-CPU hash, LRU hash, LRU
// per-CPU hash or hash of maps, specialised for the key size: the same
// steps as the lock-free Go lookup (maps/hash.go: hashMap.lookup and find),
// which the differential tests hold it to.
//
//	      r0 = HashKey(seed, key)              emitHash, unrolled
//	      r3 = buckets[r0 & mask]              head of the chain
//	      if r3 != 0 goto loop
//	miss: r0 = 0; goto out
//	next: r3 = elem.next; if r3 == 0 goto miss
//	loop: keys of up to 8 bytes: if elem.key != r2 (the key word) goto next
//	      longer: if elem.hash != r0 goto next, then
//	      compare the key in 8/4/2/1-byte loads, != goto next
//	      [LRU: if elem.ref == 0 { elem.ref = 1 }]
//	      r0 = elem.value (the value's address) [+ cpu * value size]
//	      (hash of maps: r0 = the inner map's handle stored there)
//	out:
//
// Memory order. Writers (Go, holding the bucket lock) fill a new element
// completely, then publish it with an atomic store of the link that points
// at it; unlinked elements are reused only after every run that could have
// seen them has ended (maps.Domain). So a reader needs each link load to be
// a single untorn 8-byte load ordered before the loads of the element it
// names. The links are 8-byte aligned (the bucket array and the elements of
// the pool are), so plain loads are untorn. On amd64 (TSO) loads are not
// reordered with loads and the writer's stores are seen in program order,
// and atomic.LoadUint64, which the Go path uses, compiles to a plain MOV
// there: the JIT's loads are the same instructions. The interpreter performs
// the sequence one instruction at a time through a plain Go load per
// instruction; each element load uses the address the previous link load
// produced (an address dependency, which every CPU Go supports orders), and
// the compiler cannot move a load across the dispatch of the next
// instruction. The hash and key of a published element never change, nor
// does its value except for per-CPU values, which programs update in place
// as in the kernel (where a reader may see an update half done, as there).
// The LRU mark is a hint for the clock: a plain 4-byte store suffices (the
// Go path's atomic store adds an ordering nobody relies on), and like the Go
// path it stores only when the mark is clear, so hot elements' cache lines
// stay shared.
func hashLookup(q *seq, s maps.Spec) []isa.Instruction {
	k := int(s.KeySize)
	vsize := (uint64(s.ValueSize) + 7) &^ 7
	if s.Type.PerCPU() && vsize > 1<<31-1 {
		return nil
	}
	// A key of up to 8 bytes is one word: emitHash leaves it in r2, and an
	// element's zero-padded key compares with it in one 8-byte load, with
	// no need to compare the stored hash first (equal keys have equal
	// hashes, so the result is the Go lookup's).
	short := k <= 8
	emitHash(q, k, short)
	loop, next, miss := q.newLabel(), q.newLabel(), q.newLabel()
	q.field(isa.SizeW, isa.R3, maps.HashFieldMask)
	q.emit(
		aluX(isa.ALUAnd, isa.R3, isa.R0),
		aluK(isa.ALULsh, isa.R3, 3),
	)
	if s.Type.PerCPU() {
		// Read while r1 still holds the map: the CPU areas' stride.
		q.field(isa.SizeDW, isa.R5, maps.HashFieldCPUStride)
	}
	q.field(isa.SizeDW, isa.R1, maps.HashFieldBuckets)
	q.emit(
		aluX(isa.ALUAdd, isa.R3, isa.R1),
		tldx(isa.SizeDW, isa.R3, isa.R3, 0), // the bucket head
	)
	// The hit on the chain's first element runs straight through: one taken
	// jump, into the loop, and none out of it.
	q.jump(jmpK(isa.JumpNE, isa.R3, 0), loop)
	q.bind(miss)
	q.emit(aluK(isa.ALUMov, isa.R0, 0))
	q.jump(ja, out)
	q.bind(next)
	q.emit(tldx(isa.SizeDW, isa.R3, isa.R3, maps.HashElemNext))
	q.jump(jmpK(isa.JumpEQ, isa.R3, 0), miss)
	q.bind(loop)
	if short {
		q.emit(tldx(isa.SizeDW, isa.R1, isa.R3, maps.HashElemKey))
		q.jump(jmpX(isa.JumpNE, isa.R1, isa.R2), next)
	} else {
		q.emit(tldx(isa.SizeW, isa.R1, isa.R3, maps.HashElemHash))
		q.jump(jmpX(isa.JumpNE, isa.R1, isa.R0), next)
		for _, c := range keyChunks(k) {
			q.emit(
				tldx(c.size, isa.R1, isa.R3, maps.HashElemKey+c.off),
				ldx(c.size, isa.R4, isa.R2, c.off),
			)
			q.jump(jmpX(isa.JumpNE, isa.R1, isa.R4), next)
		}
	}
	if s.Type == maps.LRUHash || s.Type == maps.LRUPerCPUHash {
		marked := q.newLabel()
		q.emit(tldx(isa.SizeW, isa.R1, isa.R3, maps.HashElemRef))
		q.jump(jmpK(isa.JumpNE, isa.R1, 0), marked)
		q.emit(isa.Instruction{Op: isa.ClassST | isa.ModeTrusted | isa.SizeW, Dst: isa.R3, Off: maps.HashElemRef, Imm: 1})
		q.bind(marked)
	}
	valOff := int32(maps.HashElemKey + (k+7)&^7)
	if s.Type == maps.HashOfMaps {
		// The value starts with the inner map's handle, written before
		// the element was published and never changed.
		q.emit(tldx(isa.SizeDW, isa.R0, isa.R3, int(valOff)))
		return q.done()
	}
	// The element holds the address of its value slot, in a block apart
	// from the elements (maps/hash.go), written before the element was
	// published and never changed while it is.
	q.emit(tldx(isa.SizeDW, isa.R0, isa.R3, int(valOff)))
	if s.Type.PerCPU() {
		// That CPU's value, in its area of the value block.
		q.emit(
			isa.Instruction{Op: isa.OpCPUIndex, Dst: isa.R1},
			aluX(isa.ALUMul, isa.R1, isa.R5),
			aluX(isa.ALUAdd, isa.R0, isa.R1),
		)
	}
	return q.done()
}

// chunk is one load of a key: size code and offset.
type chunk struct {
	size uint8
	off  int
}

// keyChunks splits a key of k bytes into 8-byte loads and a tail of 4-,
// 2- and 1-byte loads, so that no load reads past the key.
func keyChunks(k int) []chunk {
	var cs []chunk
	off := 0
	for ; k-off >= 8; off += 8 {
		cs = append(cs, chunk{isa.SizeDW, off})
	}
	for _, c := range []struct {
		n    int
		size uint8
	}{{4, isa.SizeW}, {2, isa.SizeH}, {1, isa.SizeB}} {
		if k-off >= c.n {
			cs = append(cs, chunk{c.size, off})
			off += c.n
		}
	}
	return cs
}

// emitHash emits r0 = maps.HashKey(seed, key) for a key of k bytes at r2,
// starting from the initial state in the header at r1. It clobbers r3-r5.
// With short (k <= 8) it also replaces r2 with the key as one zero-extended
// little-endian word, and leaves the hash's upper 32 bits in r0 (only the
// low ones select the bucket).
func emitHash(q *seq, k int, short bool) {
	q.field(isa.SizeDW, isa.R0, maps.HashFieldHashInit)
	// round mixes the word in r3 into r0: one word,
	// r0 = (r0 ^ r3) * K1; several, r0 = rotl64(r0 ^ r3*K2, 31) * K1.
	round := func() {
		if k <= 8 {
			q.emit(aluX(isa.ALUXor, isa.R0, isa.R3))
		} else {
			q.emit(ldImm64(isa.R4, maps.HashK2)...)
			q.emit(
				aluX(isa.ALUMul, isa.R3, isa.R4),
				aluX(isa.ALUXor, isa.R0, isa.R3),
				aluX(isa.ALUMov, isa.R3, isa.R0),
				aluK(isa.ALURsh, isa.R3, 33),
				aluK(isa.ALULsh, isa.R0, 31),
				aluX(isa.ALUOr, isa.R0, isa.R3),
			)
		}
		q.emit(ldImm64(isa.R4, maps.HashK1)...)
		q.emit(aluX(isa.ALUMul, isa.R0, isa.R4))
	}
	chunks := keyChunks(k)
	if short && len(chunks) == 1 {
		// One load: the word goes straight to r2.
		q.emit(ldx(chunks[0].size, isa.R2, isa.R2, 0))
		q.emit(aluX(isa.ALUXor, isa.R0, isa.R2))
		q.emit(ldImm64(isa.R4, maps.HashK1)...)
		q.emit(aluX(isa.ALUMul, isa.R0, isa.R4))
	} else {
		// The tail word is the zero-extended little-endian value of the
		// last k%8 bytes: its 4-, 2- and 1-byte parts shifted into place.
		shift, tail := 0, false
		for _, c := range chunks {
			if c.size == isa.SizeDW {
				q.emit(ldx(isa.SizeDW, isa.R3, isa.R2, c.off))
				round()
				continue
			}
			if !tail {
				q.emit(ldx(c.size, isa.R3, isa.R2, c.off))
			} else {
				q.emit(
					ldx(c.size, isa.R4, isa.R2, c.off),
					aluK(isa.ALULsh, isa.R4, int32(shift)),
					aluX(isa.ALUOr, isa.R3, isa.R4),
				)
			}
			tail = true
			shift += 8 * isa.SizeBytes(c.size)
		}
		if tail {
			if short {
				q.emit(aluX(isa.ALUMov, isa.R2, isa.R3))
			}
			round()
		}
	}
	// The finalizer: h ^= h>>33; h *= K3; h ^= h>>29; h *= K4; h ^= h>>32;
	// then the low 32 bits.
	fold := func(n int32) {
		q.emit(
			aluX(isa.ALUMov, isa.R3, isa.R0),
			aluK(isa.ALURsh, isa.R3, n),
			aluX(isa.ALUXor, isa.R0, isa.R3),
		)
	}
	fold(33)
	q.emit(ldImm64(isa.R4, maps.HashK3)...)
	q.emit(aluX(isa.ALUMul, isa.R0, isa.R4))
	fold(29)
	q.emit(ldImm64(isa.R4, maps.HashK4)...)
	q.emit(aluX(isa.ALUMul, isa.R0, isa.R4))
	fold(32)
	if !short {
		// The 32-bit hash, to compare with the stored one. Short keys do
		// not compare it, and the bucket mask has no high bits.
		q.emit(isa.Instruction{Op: isa.ClassALU | isa.ALUMov | isa.SrcX, Dst: isa.R0, Src: isa.R0})
	}
}
