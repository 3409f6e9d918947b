package progtype

// RawTracepointArgs is the largest number of arguments a raw tracepoint
// passes (MAX_BPF_FUNC_ARGS), u64 each in struct bpf_raw_tracepoint_args.
const RawTracepointArgs = 12

// RawTracepoint is BPF_PROG_TYPE_RAW_TRACEPOINT: the context is the
// tracepoint's arguments, a u64 each, which programs read with any aligned
// load inside the 12 there may be and never write
// (raw_tp_prog_is_valid_access). The kernel's test run
// (bpf_prog_test_run_raw_tp) takes them from the context input, which must
// hold at least the bytes the program reads (max_ctx_offset), and takes no
// packet, repetitions or context output.
var RawTracepoint = &Type{
	Name:         "raw_tracepoint",
	ContextSize:  8 * RawTracepointArgs,
	Fields:       []Field{{Name: "args", Offset: 0, Size: 8 * RawTracepointArgs, Read: true, Memory: true}},
	ContextNames: []string{"bpf_raw_tracepoint_args"},
	Helpers:      rawTracepointHelpers,
	Trace:        &TraceRun{Kernel: true},
}
