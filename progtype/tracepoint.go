package progtype

// TraceMaxSize is the kernel's PERF_MAX_TRACE_SIZE, the largest
// tracepoint record a program sees.
const TraceMaxSize = 8192

// Tracepoint is BPF_PROG_TYPE_TRACEPOINT: the context is the event's
// record (struct trace_event_raw_<event>), which programs read with any
// aligned load from byte 8 on, up to TraceMaxSize, and never write
// (tp_prog_is_valid_access). Its first 8 bytes, the record's common
// fields, are hidden: the kernel keeps a pointer to the registers there.
// The kernel has no test run for it; bpfvm's runs take the record from the
// context input (zero past its end, as a shorter record leaves it) and the
// rest of the world from RunOptions.Trace.
var Tracepoint = &Type{
	Name:        "tracepoint",
	ContextSize: TraceMaxSize,
	Fields:      []Field{{Name: "record", Offset: 8, Size: TraceMaxSize - 8, Read: true, Memory: true}},
	Helpers:     tracepointHelpers,
	Trace:       &TraceRun{},
}
