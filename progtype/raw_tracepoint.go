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

// RawTracepointWritable is BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE: a raw
// tracepoint whose first argument is a buffer the program may write
// (raw_tp_writable_prog_is_valid_access): it loads it whole, as a pointer
// (TPBuffer), and reads and writes the buffer at constant offsets; the
// other arguments are read as a raw tracepoint's. The kernel checks the
// furthest access (max_tp_access) against the tracepoint's writable size
// when the program is attached, and has no test run for the type; bpfvm's
// runs take the buffer from RunOptions.Trace (Trace.Buffer, refused when
// shorter than the program's furthest access) and the other arguments
// from the context input, and give the buffer back in Result.Buffer. Loads
// of part of the buffer's address, which the kernel allows as scalars,
// are refused.
var RawTracepointWritable = &Type{
	Name:        "raw_tracepoint_writable",
	ContextSize: 8 * RawTracepointArgs,
	Fields: []Field{
		{Name: "buffer", Offset: 0, Size: 8, Read: true, Kind: TPBuffer},
		{Name: "args", Offset: 8, Size: 8 * (RawTracepointArgs - 1), Read: true, Memory: true},
	},
	ContextNames: []string{"bpf_raw_tracepoint_args"},
	Helpers:      rawTracepointHelpers,
	Trace:        &TraceRun{},
}
