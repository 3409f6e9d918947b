package loader

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// applyFixup applies a CO-RE fixup to its instruction: cilium/ebpf's own
// COREFixup.Apply where it runs, on Linux.
func applyFixup(f *btf.COREFixup, ins *asm.Instruction) error { return f.Apply(ins) }
