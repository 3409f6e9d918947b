package isa

import (
	"crypto/sha256"
	"encoding/hex"
)

// Tag is the kernel's tag of a program or function (bpf_prog_calc_tag):
// the first 8 bytes of the SHA-256 of its instructions in wire form, in
// hex, with the immediates of map references (both halves of an LD_IMM64
// of a map or a map value) zeroed, as they hold file descriptors. The
// kernel tags a program as loaded (Linux 6.18 hashes with SHA-256, older
// kernels with SHA-1) and each function of a program with subprograms as
// it is JIT-compiled, after the verifier's rewrites.
func Tag(insns []Instruction) string {
	h := sha256.New()
	var buf [16]byte
	for i := 0; i < len(insns); i++ {
		ins := insns[i]
		mapLoad := ins.IsLdImm64() && (uint8(ins.Src) == PseudoMapFD || uint8(ins.Src) == PseudoMapValue)
		if mapLoad {
			ins.Imm = 0
		}
		h.Write(ins.Encode(buf[:0]))
		if mapLoad && i+1 < len(insns) {
			i++
			next := insns[i]
			next.Imm = 0
			h.Write(next.Encode(buf[:0]))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
