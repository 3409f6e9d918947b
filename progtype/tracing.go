package progtype

import "github.com/cilium/ebpf"

// MaxTracingArgs is the kernel's MAX_BPF_FUNC_ARGS: the u64 slots of a
// tracing program's context.
const MaxTracingArgs = 12

// The BPF_PROG_TYPE_TRACING types bpfvm verifies, one per attach type:
// their context is the attach target's arguments, one u64 slot each (two
// for structs of 9 to 16 bytes), typed by its BTF prototype (the
// verifier's btf_ctx_access, verifier/tracing.go), and fexit's and
// fmod_ret's the return value after them. The target is
// ProgramSpec.AttachTo, resolved in the kernel's BTF at load.
//
// Their helper set is bpf_base_func_proto for now: the kernel's
// tracing_prog_func_proto is larger (the tracing helper sets are another
// change's).
var (
	// TPBTF is tp_btf (BPF_TRACE_RAW_TP): a tracepoint's arguments
	// (the prototype of its btf_trace_<name> typedef after the first,
	// void *__data), pointers trusted.
	TPBTF = tracingType("tp_btf", ebpf.AttachTraceRawTp, false)
	// FEntry is fentry (BPF_TRACE_FENTRY): a kernel function's arguments
	// on entry.
	FEntry = tracingType("fentry", ebpf.AttachTraceFEntry, true)
	// FExit is fexit (BPF_TRACE_FEXIT): the arguments and, after them,
	// the return value.
	FExit = tracingType("fexit", ebpf.AttachTraceFExit, true)
	// FModRet is fmod_ret (BPF_MODIFY_RETURN): the arguments and the
	// return value so far, of a function returning an int; the program's
	// return replaces it.
	FModRet = tracingType("fmod_ret", ebpf.AttachModifyReturn, false)
)

// tracingType is a tracing type; zeroRet makes its programs return 0, as
// the kernel's check_return_code has fentry and fexit.
func tracingType(name string, a ebpf.AttachType, zeroRet bool) *Type {
	return &Type{
		Name:        name,
		ContextSize: 8 * MaxTracingArgs,
		Attach:      a,
		BTFArgs:     true,
		Helpers:     tracingHelpers(a, hasTrampoline(a)),
		CheckReturn: zeroRet,
		// fentry, fexit and fmod_ret programs may sleep at functions on
		// the kernel's error injection list; BTF tracepoints never.
		Sleepable: a != ebpf.AttachTraceRawTp,
	}
}

// tracingTypes are the tracing types by attach type.
var tracingTypes = map[ebpf.AttachType]*Type{
	ebpf.AttachTraceRawTp:   TPBTF,
	ebpf.AttachTraceFEntry:  FEntry,
	ebpf.AttachTraceFExit:   FExit,
	ebpf.AttachModifyReturn: FModRet,
	ebpf.AttachTraceIter:    Iter,
}
