package bpfvm

import (
	"bpfvm/vm"
)

// helper resolves a helper id for a program: the program's own overrides
// first, then the built-in set.
func (p *Program) helper(id int32) vm.Helper {
	if h, ok := p.opts.Helpers[id]; ok {
		return h
	}
	return builtinHelper(id)
}

// builtinHelper returns bpfvm's implementation of a kernel helper.
func builtinHelper(id int32) vm.Helper {
	return nil
}
