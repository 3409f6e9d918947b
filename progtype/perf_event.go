package progtype

// PerfEventDataSize is the size of struct bpf_perf_event_data: the
// sampled registers (x86-64 struct pt_regs), sample_period and addr.
const PerfEventDataSize = PtRegsSize + 16

// Offsets of struct bpf_perf_event_data's fields after the registers.
const (
	PerfEventSamplePeriod = PtRegsSize
	PerfEventAddr         = PtRegsSize + 8
)

// PerfEvent is BPF_PROG_TYPE_PERF_EVENT with struct bpf_perf_event_data
// (pe_prog_is_valid_access): read-only; each register read whole (8
// bytes), sample_period and addr narrow as well. The kernel converts the
// accesses into loads from the event's registers and sample
// (pe_prog_convert_ctx_access); bpfvm's context is the structure as the
// program sees it. The kernel has no test run for it; bpfvm's runs take
// the structure from the context input and the rest of the world
// (the counter's value, the stacks) from RunOptions.Trace.
var PerfEvent = &Type{
	Name:         "perf_event",
	ContextSize:  PerfEventDataSize,
	Fields:       perfEventFields(),
	ContextNames: []string{"bpf_perf_event_data", "bpf_perf_event_data_kern"},
	Helpers:      perfEventHelpers,
	Trace:        &TraceRun{},
}

// perfEventFields are the registers, a field each, then sample_period and
// addr.
func perfEventFields() []Field {
	regs := []string{"r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8",
		"ax", "cx", "dx", "si", "di", "orig_ax", "ip", "cs", "flags", "sp", "ss"}
	fs := make([]Field, 0, len(regs)+2)
	for i, r := range regs {
		fs = append(fs, Field{Name: "regs." + r, Offset: uint32(8 * i), Size: 8, Read: true})
	}
	return append(fs,
		Field{Name: "sample_period", Offset: PerfEventSamplePeriod, Size: 8, Read: true, Narrow: true},
		Field{Name: "addr", Offset: PerfEventAddr, Size: 8, Read: true, Narrow: true})
}
