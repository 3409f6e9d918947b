package progtype

import "github.com/cilium/ebpf"

// PtRegsSize is the size of struct pt_regs on x86-64, the registers a
// kprobe sees and a perf event's sample holds. bpfvm's tracing contexts
// are x86-64's on every host: programs are compiled for a target
// architecture (clang -target bpf with __TARGET_ARCH_x86, libbpf's
// PT_REGS_PARM1 and friends), and x86-64 is the one bpfvm models, as its
// shipped kernel types are x86-64's.
const PtRegsSize = 168

// Offsets of the x86-64 struct pt_regs fields a host fills a kprobe's
// context with (kernel order: r15 at 0 ... ss at 160).
const (
	PtRegsR15    = 0
	PtRegsR14    = 8
	PtRegsR13    = 16
	PtRegsR12    = 24
	PtRegsBP     = 32
	PtRegsBX     = 40
	PtRegsR11    = 48
	PtRegsR10    = 56
	PtRegsR9     = 64
	PtRegsR8     = 72
	PtRegsAX     = 80
	PtRegsCX     = 88
	PtRegsDX     = 96
	PtRegsSI     = 104
	PtRegsDI     = 112
	PtRegsOrigAX = 120
	PtRegsIP     = 128
	PtRegsCS     = 136
	PtRegsFlags  = 144
	PtRegsSP     = 152
	PtRegsSS     = 160
)

// Kprobe is BPF_PROG_TYPE_KPROBE (kprobes, kretprobes, uprobes, uretprobes,
// USDT): the context is the probed task's struct pt_regs, which programs
// read with any aligned load inside it and never write
// (kprobe_prog_is_valid_access). The kernel has no test run for it;
// bpfvm's runs take the registers from the context input (zero when none
// is given) and the rest of the world from RunOptions.Trace.
var Kprobe = &Type{
	Name:         "kprobe",
	ContextSize:  PtRegsSize,
	Fields:       []Field{{Name: "regs", Offset: 0, Size: PtRegsSize, Read: true, Memory: true}},
	ContextNames: []string{"pt_regs"},
	Helpers:      kprobeHelpers,
	// uprobe.s/ and usdt.s/ programs: the kernel takes sleepable kprobes
	// and refuses to attach them but to uprobes.
	Sleepable: true,
	Trace:     &TraceRun{},
}

// uprobeSession is BPF_TRACE_UPROBE_SESSION, which cilium/ebpf does not
// name yet.
const uprobeSession ebpf.AttachType = 57

// kprobeSession is a kprobe of a session (BPF_TRACE_KPROBE_SESSION,
// BPF_TRACE_UPROBE_SESSION), whose entry program returns 0 to run the
// return one or 1 not to (check_return_code's range [0, 1]).
var kprobeSession = func() *Type {
	t := *Kprobe
	t.CheckReturn, t.ReturnMin, t.ReturnMax = true, 0, 1
	return &t
}()
