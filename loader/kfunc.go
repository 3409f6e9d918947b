package loader

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm/isa"
)

// ErrUnknownKfunc is a call of a kernel function bpfvm does not implement.
var ErrUnknownKfunc = errors.New("unknown kfunc")

// ResolveKfuncs gives every kfunc call in insns bpfvm's id of the function
// it names (isa.KfuncID) as its constant, where the kernel would put the
// function's BTF id. cilium/ebpf marks such calls (IsKfuncCall) and keeps
// the name of the extern __ksym declaration as the instruction's reference.
// A function bpfvm lacks is an error naming it and the instruction.
func ResolveKfuncs(insns asm.Instructions) error {
	for i := range insns {
		ins := &insns[i]
		if !ins.IsKfuncCall() {
			continue
		}
		name := ins.Reference()
		id, ok := isa.KfuncID(name)
		if !ok {
			if name == "" {
				name = fmt.Sprintf("with BTF id %d", ins.Constant)
			}
			return fmt.Errorf("instruction %d: %w %s", i, ErrUnknownKfunc, name)
		}
		ins.Constant = int64(id)
		ins.Offset = 0
	}
	return nil
}
