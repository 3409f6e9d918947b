//go:build !linux

package loader

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// applyFixup applies a CO-RE fixup to its instruction: COREFixup.Apply refuses
// to outside Linux, so patchPortable does what it does.
func applyFixup(f *btf.COREFixup, ins *asm.Instruction) error { return patchPortable(f, ins) }
