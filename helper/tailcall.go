package helper

import (
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// tailCallHelpers jump to another program (kernel/bpf/core.c).
var tailCallHelpers = []Helper{
	{Proto: Proto{Name: "bpf_tail_call", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything}, Ret: RetVoid, MapTypes: []maps.Type{maps.ProgArray}, TailCall: true}, Func: helperTailCall},
}

// helperTailCall is bpf_tail_call(ctx, prog_array, index): the engine runs
// the program at index in place of the caller, or the caller continues
// after the call (runner.Runner.TailCall says which).
func helperTailCall(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r2)
	if err != nil {
		return 0, err
	}
	target, errno := runner.Of(e).TailCall(e, m, uint32(r3))
	if target == nil {
		return neg(-errno), nil
	}
	return 0, target
}
