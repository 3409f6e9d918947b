package bpfvm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/jit/amd64"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// Engine selects how a program runs.
type Engine int

// Engines.
const (
	// EngineDefault picks the fastest engine available for the program.
	EngineDefault Engine = iota
	// EngineInterpreter runs the program on the interpreter.
	EngineInterpreter
	// EngineJIT compiles the program to x86-64 machine code (jit/amd64),
	// falling back to the interpreter where the JIT cannot compile it;
	// Program.Engine says which one runs. (JIT engine selection.)
	EngineJIT
)

func (e Engine) String() string {
	switch e {
	case EngineDefault:
		return "default"
	case EngineInterpreter:
		return "interp"
	case EngineJIT:
		return "jit"
	}
	return fmt.Sprintf("Engine(%d)", int(e))
}

// ParseEngine parses an engine name as the CLI's --engine flag takes it.
func ParseEngine(s string) (Engine, error) {
	switch s {
	case "", "default":
		return EngineDefault, nil
	case "interp", "interpreter":
		return EngineInterpreter, nil
	case "jit":
		return EngineJIT, nil
	}
	return 0, fmt.Errorf("engine %q: %w", s, ErrNotSupported)
}

// ProgramOptions control how programs are loaded and run.
type ProgramOptions struct {
	// Engine selects the execution engine.
	Engine Engine
	// flags are the spec's load flags (ProgramSpec.Flags), which the
	// loaders copy here for the verifier.
	flags uint32
	// Budget limits the instructions one run may execute (0: no limit). A
	// run over budget fails with vm.ErrBudget.
	Budget uint64
	// Helpers overrides or adds helpers by id: host helpers for embedding.
	Helpers map[int32]vm.Helper
	// Type overrides the program type, e.g. with a host-defined context.
	Type *progtype.Type
	// AttachType is the expected attach type of a program NewRawProgram
	// loads, where the kernel's rules depend on it (cgroup_sock_addr's
	// fields and return values, cgroup_skb egress's return values):
	// progtype.OfAttach. NewProgram and NewCollection take the spec's
	// (ProgramSpec.AttachType) instead.
	AttachType ebpf.AttachType
	// AttachTo is the attach target of a tracing program NewRawProgram
	// loads (a kernel function for fentry, fexit and fmod_ret, a
	// tracepoint for tp_btf), found in KernelTypes (or the default
	// target) as the kernel finds it: its prototype types the context.
	// NewProgram and NewCollection take the spec's (ProgramSpec.AttachTo).
	AttachTo string
	// Output receives the messages of bpf_trace_printk and
	// bpf_trace_vprintk, one Write per message, formatted as lines of the
	// kernel's trace_pipe: "bpf_trace_printk: " and the message, ending in
	// a newline. Writes from concurrent runs are serialized. Nil discards
	// the messages.
	Output io.Writer
	// Task is what the bpf_get_current_* helpers report. Nil reports the
	// host process and the OS thread of the run.
	Task *Task

	// NoVerify skips verification: for trusted code the verifier cannot
	// prove safe. Such programs run in checked mode, where every memory
	// access is validated at run time. Programs without a context
	// (unspecified type, as in the conformance suite) always run so.
	NoVerify bool
	// Checks selects run-time memory checks for verified programs (defense
	// in depth): ChecksDefault turns them on for Unprivileged loads only.
	// Unverified programs always run checked.
	Checks Checks
	// HelperProtos gives the verifier the prototypes of host helpers.
	HelperProtos map[int32]*verifier.Proto
	// LogLevel selects the verifier log (see verifier.Options), in
	// cilium/ebpf's type, so that its constants (ebpf.LogLevelBranch, …)
	// work. LogSize is the log buffer to start with (0: unlimited); when
	// the log does not fit, the buffer is doubled and the program verified
	// again, as cilium/ebpf does with the kernel. LogDisabled keeps a
	// rejection's VerifierError without a log: by default a program
	// rejected at LogLevel 0 is verified again at level 1 for it, as
	// cilium/ebpf does.
	LogLevel    LogLevel
	LogSize     int
	LogDisabled bool
	// Unprivileged verifies with the rules for loads without CAP_BPF.
	Unprivileged bool
	// Funcs is the BTF func_info of a raw program's functions
	// (NewRawProgram), one per function in order: global functions are
	// then verified once against their prototypes, and subprograms may
	// hold LD_ABS and tail calls, as in the kernel. Programs from a
	// ProgramSpec take theirs from its instructions' btf.FuncMetadata.
	Funcs []verifier.FuncInfo
	// Lines is the BTF line_info of a raw program, ordered by instruction,
	// for the source lines in the verifier log. Programs from a
	// ProgramSpec take theirs from its instructions' Source.
	Lines []verifier.LineInfo
	// NoInline keeps helper calls that the rewrite would inline (map
	// lookups, bpf_get_smp_processor_id, bpf_loop, bpf_iter_num_next),
	// for measuring what inlining gains. Code the verifier never reached
	// is made unreachable either way.
	NoInline bool
	// JIT tunes the JIT.
	JIT JITOptions
	// MayGotoBudget is how long the may_goto loops of one function call
	// may run before may_goto starts jumping (the kernel's timed
	// may_goto; see vm/maygoto.go). Default 250 ms, as in the kernel.
	MayGotoBudget time.Duration
	// KernelTypes is the target BTF the program's CO-RE relocations are
	// applied against, as cilium/ebpf's ProgramOptions.KernelTypes
	// (expected to hold vmlinux's and the modules' types, as btfhub
	// distributes them). Nil: the host's /sys/kernel/btf/vmlinux and
	// modules when the host has them, else the types shipped with bpfvm
	// (kernelbtf.Shipped); pass kernelbtf.Shipped() for the same result
	// on every machine. A relocation the target cannot satisfy poisons its
	// instruction, which the verifier rejects only if it reaches it.
	KernelTypes *btf.Spec
	// ExtraRelocationTargets are further targets for CO-RE relocations
	// after KernelTypes (or the default), as cilium/ebpf's.
	ExtraRelocationTargets []*btf.Spec
	// poisons are the instructions CO-RE poisoned, which the loaders copy
	// here to explain a rejection at one.
	poisons []loader.Poison
	// localTypes are the program's own BTF types by the ids CO-RE's
	// bpf_core_type_id_local gave it (bpf_obj_new's argument).
	localTypes map[btf.TypeID]btf.Type
	// targets are the load's CO-RE targets, whose vmlinux is the kernel
	// BTF verification uses when KernelTypes is nil (nil: found anew).
	targets *coreTargets
}

// Checks selects whether a verified program also runs with the run-time
// memory checks of checked mode: defense in depth for code from outside,
// where a verifier (or rewrite) bug must end the run with vm.ErrMemory
// rather than let the program touch memory it does not own. DESIGN.md,
// "Defense in depth", says what runs checked and what it costs.
type Checks int

// Run-time check settings.
const (
	// ChecksDefault checks Unprivileged loads and trusts the verifier for
	// the others, as the kernel does for all.
	ChecksDefault Checks = iota
	// ChecksOn checks every access of verified programs too.
	ChecksOn
	// ChecksOff trusts the verifier, also for Unprivileged loads.
	ChecksOff
)

func (c Checks) String() string {
	switch c {
	case ChecksDefault:
		return "default"
	case ChecksOn:
		return "on"
	case ChecksOff:
		return "off"
	}
	return fmt.Sprintf("Checks(%d)", int(c))
}

// checked reports whether verified programs loaded with opts run checked.
func (o *ProgramOptions) checked() bool {
	return o.Checks == ChecksOn || o.Checks == ChecksDefault && o.Unprivileged
}

// LogLevel selects the verifier's log: cilium/ebpf's type (LogLevelBranch,
// LogLevelInstruction, LogLevelStats); bpfvm's verifier reads it as the
// kernel's log_level (see verifier.Options).
type LogLevel = ebpf.LogLevel

// JITOptions tune the JIT (package jit/amd64).
type JITOptions struct {
	// Memory is the executable memory pool, with the limits of its near
	// and far tiers; nil is the process's pool (amd64.DefaultMemory).
	Memory *amd64.Memory
	// Far places the code in far memory, where calls to native helper
	// routines are indirect, as when near memory is used up.
	Far bool
	// Retpoline makes indirect calls go through a retpoline thunk.
	Retpoline bool
	// Blind forces constant blinding of immediates; it is always on for
	// Unprivileged loads (as the kernel's bpf_jit_harden=1).
	Blind bool
	// NoNatives serves every helper from Go, even those with a native
	// routine (bpf_get_smp_processor_id, bpf_get_prandom_u32,
	// bpf_get_numa_node_id), for measuring.
	NoNatives bool
}

// JITInfo describes a program's machine code: the memory tier (none when
// the program runs on the interpreter), size and pages, native calls and
// hardening.
type JITInfo = amd64.Info

// Program is a loaded eBPF program. It is safe for concurrent use.
//
// Close releases the user's reference: runs then fail with an error
// wrapping ErrClosed, while prog_array slots holding the program keep it
// callable; its code and its references to maps go when the last slot
// lets go and no run can still be inside it.
type Program struct {
	name  string
	typ   ebpf.ProgramType
	insns []isa.Instruction // as loaded, map references by index into maps
	maps  []*Map
	opts  ProgramOptions
	// run is the program as runners run it (package runner): engine,
	// memory mode, lifetime.
	run *runner.Program
	// users counts the open Programs sharing run: this one and its clones
	// (Clone, pins). The last Close closes run.
	users *refCount
	// ref is this reference's own state.
	ref  *progRef
	kind Engine // the engine that runs: EngineInterpreter or EngineJIT
	jit  JITInfo
	// xlated is the program after rewriting, map references by index.
	xlated []isa.Instruction
	// xlatedLines and xlatedFuncs are the BTF line and func info moved to
	// the rewritten instructions (nil when not rewritten).
	xlatedLines []verifier.LineInfo
	xlatedFuncs []verifier.FuncInfo
	stats       verifier.Stats

	// VerifierLog is the verifier's log (with ProgramOptions.LogLevel > 0).
	VerifierLog string
}

// RunOptions mirror cilium/ebpf's RunOptions for BPF_PROG_TEST_RUN.
type RunOptions struct {
	// Data is the input packet (or, for programs of unspecified type, the
	// memory R1 points at; R2 holds its length).
	Data []byte
	// DataOut receives the packet after the run. Optional.
	DataOut []byte
	// Context is the input context structure, as bytes or a pointer to a
	// fixed-size value. Optional.
	Context any
	// ContextOut receives the context after the run. Optional.
	ContextOut any
	// Repeat runs the program this many times (at least once), as the
	// kernel's test run does: on the same context and packet, each run
	// seeing them as the one before left them. The result and DataOut are
	// the last run's.
	Repeat uint32
	// RunContext cancels the run: waiting for a free runner, and the run
	// itself, which stops with the context's error soon after it is done.
	// Optional. (Context is the program's context, as in cilium/ebpf.)
	RunContext context.Context
	// Flags, CPU and BatchSize are the kernel's test-run fields, with
	// its rules per program type (see runCPU): CPU selects the runner,
	// and so bpf_get_smp_processor_id and the per-CPU values the run
	// sees (for XDP, a CPU other than 0; 0 runs on the caller's runner,
	// the one its P, the Go scheduler's CPU, last ran on, as the kernel
	// runs on the current CPU). Reset is accepted for cilium/ebpf's sake
	// and never called: a run is never interrupted and restarted.
	Flags     uint32
	CPU       uint32
	BatchSize uint32
	Reset     func()
	// Net is the host's world that networking programs' helpers read:
	// the packet's socket and tunnel metadata, the devices, the socket
	// table the socket lookups search, the routing and neighbour tables
	// bpf_fib_lookup asks. Optional: nil is the world of the kernel's
	// test run on the loopback device. A world that does not hold
	// together (Net.Validate) fails the run with an error wrapping
	// ErrInvalidNet.
	Net *Net
	// Trace is the world tracing programs' helpers read (kprobe,
	// tracepoint, raw_tracepoint, perf_event): the current task, the
	// kernel and user memory the probe reads read, the probed function,
	// the cookie, the stacks, the perf counter. Optional: nil is a world
	// with nothing to read (every probe read faults), the program's task
	// (ProgramOptions.Task) and zeros.
	Trace *Trace
}

// Net is the host's side of a run of a networking program (RunOptions.Net).
type Net = runner.Net

// Trace is the host's side of a run of a tracing program (RunOptions.Trace).
type Trace = runner.Trace

// TaskInfo is a task of the traced world (Trace.Tasks), which the
// open-coded task iterators walk.
type TaskInfo = runner.TaskInfo

// VMA is a memory area of a task of the traced world (TaskInfo.VMAs).
type VMA = runner.VMA

// TraceMemory is a region of the traced world's kernel or user memory
// (Trace.Memory).
type TraceMemory = runner.Memory

// KernelObject is an object of the traced world's kernel memory
// (Trace.Objects): a kernel struct laid out by the kernel's BTF, at an
// address of the world's, which tracing programs read through BTF
// pointers (probe loads), the probe-read helpers, and the helpers taking
// kernel objects.
type KernelObject = runner.KernelObject

// ErrNoField is returned by KernelObject.Set and Offset for a path that
// names no member.
var ErrNoField = runner.ErrNoField

// NewKernelObject returns a zeroed kernel object of the struct or union
// named name at addr, laid out by types: the BTF the program is loaded
// against (ProgramOptions.KernelTypes), nil for the default target (the
// host's vmlinux, else kernelbtf.Shipped). Its members are set by name
// (KernelObject.Set).
func NewKernelObject(types *btf.Spec, name string, addr uint64) (*KernelObject, error) {
	return runner.NewKernelObject(types, name, addr)
}

func init() {
	runner.DefaultKernelTypes = func() *btf.Spec { return defaultKernelTypes(ProgramOptions{}) }
}

// PerfValue is a perf counter's reading (Trace.Counter).
type PerfValue = runner.PerfValue

// Signal is a signal a run sent (Result.Signals).
type Signal = runner.Signal

// Cgroup is a cgroup of the host's cgroup v2 hierarchy (Net.Cgroups).
type Cgroup = runner.Cgroup

// Socket is a socket of the host: the packet's (Net.Socket) or one of
// the socket table (Net.Sockets).
type Socket = runner.Socket

// TCPInfo is what bpf_tcp_sock shows of a TCP socket (Socket.TCP).
type TCPInfo = runner.TCPInfo

// Syncookies is the SYN cookie setting and secret of the host's world
// (Net.Syncookies): what the TCP syncookie helpers make and check
// cookies with.
type Syncookies = runner.Syncookies

// Peer is a network namespace the run's has an id for (Net.Peers).
type Peer = runner.Peer

// Route is a route of the host's routing table (Net.Routes).
type Route = runner.Route

// RouteType is a route's type (Route.Type).
type RouteType = runner.RouteType

// Route types (the kernel's RTN_*).
const (
	RouteUnicast     = runner.RouteUnicast
	RouteLocal       = runner.RouteLocal
	RouteBroadcast   = runner.RouteBroadcast
	RouteAnycast     = runner.RouteAnycast
	RouteMulticast   = runner.RouteMulticast
	RouteBlackhole   = runner.RouteBlackhole
	RouteUnreachable = runner.RouteUnreachable
	RouteProhibit    = runner.RouteProhibit
)

// Rule is a policy routing rule (Net.Rules).
type Rule = runner.Rule

// Neighbor is an entry of the host's neighbour table (Net.Neighbors).
type Neighbor = runner.Neighbor

// Device is a network device of the host (Net.Devices).
type Device = runner.Device

// Tunnel is a packet's tunnel metadata: received (Net.Tunnel) or set by
// bpf_skb_set_tunnel_key (Result.Tunnel).
type Tunnel = runner.Tunnel

// Clone is a copy of the packet sent with bpf_clone_redirect
// (Result.Clones).
type Clone = runner.Clone

// NextHop is the next hop of a bpf_redirect_neigh (Redirect.NextHop).
type NextHop = runner.NextHop

// Result is what Execute returns about a run.
type Result struct {
	// R0 is the full 64-bit value of R0 at exit.
	R0 uint64
	// Duration is the mean time per run.
	Duration time.Duration
	// DataSize is the size of the output packet.
	DataSize int
	// Redirect records a bpf_redirect, bpf_redirect_map,
	// bpf_redirect_neigh or bpf_redirect_peer call of the last run, whose
	// return value then says XDP_REDIRECT or TC_ACT_REDIRECT.
	Redirect Redirect
	// Clones are the copies of the packet the last run sent with
	// bpf_clone_redirect.
	Clones []Clone
	// Tunnel is the packet's tunnel metadata after the run: what
	// bpf_skb_set_tunnel_key and bpf_skb_set_tunnel_opt set, else what it
	// was received with (Net.Tunnel); nil for none.
	Tunnel *Tunnel
	// Signals are the signals the last run sent with bpf_send_signal and
	// bpf_send_signal_thread, in order.
	Signals []Signal
	// Buffer is a writable raw tracepoint's buffer (Trace.Buffer) as the
	// last run left it.
	Buffer []byte
	// Selected is the cookie of the socket an sk_lookup program selected
	// with bpf_sk_assign (Socket.Cookie, or the one the world gave it),
	// 0 for none: the kernel's test run returns it in the context output
	// (bpf_sk_lookup.cookie) too.
	Selected uint64
}

// Redirect is the target a program chose with bpf_redirect or
// bpf_redirect_map.
type Redirect struct {
	// Map is the map of bpf_redirect_map, nil for bpf_redirect.
	Map *Map
	// Key is the map key, or for bpf_redirect the interface index.
	Key uint64
	// Flags are the helper's flags argument.
	Flags uint64
	// Valid is set when a redirect helper was called.
	Valid bool
	// Peer marks bpf_redirect_peer: to the ingress of the peer of device
	// Key (veth, netkit) in its network namespace.
	Peer bool
	// Neigh marks bpf_redirect_neigh: out of device Key to the neighbour
	// of NextHop, or, when its Family is 0, of the packet's route.
	Neigh   bool
	NextHop NextHop
	// Socket is the cookie of the socket of bpf_sk_redirect_map,
	// bpf_sk_redirect_hash, bpf_msg_redirect_map, bpf_msg_redirect_hash
	// and bpf_sk_select_reuseport (whose Key is the index of an array, 0
	// for a sockhash), 0 for the other helpers.
	Socket uint64
}

// NewProgram loads a single program that references no maps.
func NewProgram(spec *ebpf.ProgramSpec) (*Program, error) {
	return NewProgramWithOptions(spec, ProgramOptions{})
}

// NewProgramWithOptions loads a single program that references no maps.
func NewProgramWithOptions(spec *ebpf.ProgramSpec, opts ProgramOptions) (*Program, error) {
	targets := newCORETargets(opts, nil)
	enc, err := convertFuncs(spec, targets)
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", spec.Name, err)
	}
	if enc.funcs != nil {
		opts.Funcs = enc.funcs
	}
	if lines := lineInfos(spec); lines != nil {
		opts.Lines = lines
	}
	if len(enc.refs) > 0 {
		return nil, fmt.Errorf("program %s references map %s: load it with NewCollection", spec.Name, enc.refs[0])
	}
	opts.flags, opts.poisons, opts.AttachType, opts.AttachTo, opts.targets = spec.Flags, enc.poisons, spec.AttachType, spec.AttachTo, targets
	opts.localTypes = enc.locals
	return newProgram(spec.Name, spec.Type, enc.insns, nil, nil, opts)
}

// NewRawProgram loads instructions of the given type without an ELF object,
// e.g. assembled text or a conformance test. Map references are not allowed.
func NewRawProgram(name string, typ ebpf.ProgramType, insns []isa.Instruction, opts ProgramOptions) (*Program, error) {
	return newProgram(name, typ, insns, nil, nil, opts)
}

// Name returns the program's name.
func (p *Program) Name() string { return p.name }

// Type returns the program's type.
func (p *Program) Type() ebpf.ProgramType { return p.typ }

// ContextSize is the size of the program type's context structure: what
// RunOptions.ContextOut receives (0 for programs without one).
func (p *Program) ContextSize() int { return int(p.run.Type.ContextSize) }

// Instructions returns the program as loaded (map references by index).
func (p *Program) Instructions() []isa.Instruction { return p.insns }

// XlatedInstructions returns the program as it runs, after verification
// and rewriting (context conversion, inlined helpers), with map references
// still by index: what `bpftool prog dump xlated` shows.
func (p *Program) XlatedInstructions() []isa.Instruction { return p.xlated }

// XlatedLineInfo returns the program's BTF line_info moved to the
// instructions of XlatedInstructions, as the kernel moves it for bpftool
// prog dump xlated; nil without line info.
func (p *Program) XlatedLineInfo() []verifier.LineInfo {
	if p.xlatedLines == nil && len(p.xlated) == len(p.insns) {
		return p.opts.Lines
	}
	return p.xlatedLines
}

// XlatedFuncInfo returns the program's BTF func_info moved to the
// instructions of XlatedInstructions; nil without BTF.
func (p *Program) XlatedFuncInfo() []verifier.FuncInfo {
	if p.xlatedFuncs == nil && len(p.xlated) == len(p.insns) {
		return p.opts.Funcs
	}
	return p.xlatedFuncs
}

// Maps returns the maps the program references, in the order of the indices
// its map loads use.
func (p *Program) Maps() []*Map { return p.maps }

// progRef is the state of one reference to a program.
type progRef struct {
	closed atomic.Bool
	pin    pinState
}

// Close releases the user's reference to the program (see Program). Runs
// in progress finish; closing twice, or concurrently with anything, is
// safe. The last of a program and its clones (Clone, a pin) to close
// closes the program.
func (p *Program) Close() error {
	if p.ref.closed.Swap(true) {
		return nil
	}
	if p.users.release() {
		p.run.Close()
	}
	return nil
}

// Clone returns another reference to the same program, as cilium/ebpf's
// (which duplicates the file descriptor); each is closed on its own. It
// fails with ErrClosed on a closed program. Clone of a nil Program is nil.
func (p *Program) Clone() (*Program, error) {
	if p == nil {
		return nil, nil
	}
	if p.ref.closed.Load() || !p.users.hold() {
		return nil, fmt.Errorf("program %s: clone: %w", p.name, ErrClosed)
	}
	c := *p
	c.ref = &progRef{pin: pinState{ns: p.ref.pin.ns}}
	return &c, nil
}

// NewProgramFromID returns a new reference to the program of id
// (Program.ID, a prog_array's value), as cilium/ebpf's; closed on its own,
// as a Clone. It fails with an error wrapping os.ErrNotExist (ENOENT) when
// no program with that id is open in Go: one that only prog_array slots
// keep alive can no longer be run from Go (Close makes runs fail), so it
// is not handed out.
func NewProgramFromID(id ProgramID) (*Program, error) {
	rp := runner.ProgramByID(uint32(id))
	if rp == nil {
		return nil, fmt.Errorf("program id %d: %w", id, syscall.ENOENT)
	}
	owner, ok := rp.Owner.(*Program)
	if !ok || !owner.users.hold() {
		return nil, fmt.Errorf("program id %d: %w", id, syscall.ENOENT)
	}
	c := *owner
	c.ref = &progRef{}
	return &c, nil
}

// closed reports whether this reference is closed.
func (p *Program) closed() bool { return p.ref.closed.Load() || p.run.Closed() }

// ID returns the program's id, unique in the process while the program is
// alive. It is what a prog_array stores for the program.
func (p *Program) ID() uint32 { return p.run.ID() }

// Verified reports whether the program passed the verifier.
func (p *Program) Verified() bool { return p.run.Verified }

// Checked reports whether the program's memory accesses are checked at run
// time: always for unverified programs, for verified ones as
// ProgramOptions.Checks says.
func (p *Program) Checked() bool { return p.run.Checked }

// Stats returns the cost of verifying the program.
func (p *Program) Stats() verifier.Stats { return p.stats }

// Engine returns the engine that runs the program: EngineInterpreter or
// EngineJIT (which may differ from ProgramOptions.Engine when the JIT could
// not compile the program).
func (p *Program) Engine() Engine { return p.kind }

// JITInfo describes the program's machine code; its Tier is TierNone when
// the program runs on the interpreter (also when executable memory ran
// out in both tiers, which never fails a load).
func (p *Program) JITInfo() JITInfo { return p.jit }

// Run runs the program like BPF_PROG_TEST_RUN and returns the low 32 bits of
// R0, as the kernel does.
func (p *Program) Run(opts *RunOptions) (uint32, error) {
	var res Result
	err := p.execute(opts, &res, false)
	return uint32(res.R0), err
}

// Test runs the program once on in and returns its result and output packet.
func (p *Program) Test(in []byte) (uint32, []byte, error) {
	room := runner.Headroom + runner.Tailroom
	if p.run.Type.Skb {
		room = 2 * runner.SkbMaxLen
	}
	out := make([]byte, len(in)+room)
	res, err := p.Execute(&RunOptions{Data: in, DataOut: out})
	if err != nil {
		return 0, nil, err
	}
	return uint32(res.R0), out[:res.DataSize], nil
}

// Benchmark runs the program repeat times on in and returns its result and
// the mean duration of one run.
func (p *Program) Benchmark(in []byte, repeat int, reset func()) (uint32, time.Duration, error) {
	if repeat < 0 || int64(repeat) > 1<<32-1 {
		return 0, 0, fmt.Errorf("repeat %d out of range", repeat)
	}
	if reset != nil {
		reset()
	}
	res, err := p.Execute(&RunOptions{Data: in, Repeat: uint32(repeat)})
	return uint32(res.R0), res.Duration, err
}

// Execute runs the program and reports the full result.
func (p *Program) Execute(opts *RunOptions) (Result, error) {
	var res Result
	err := p.execute(opts, &res, true)
	return res, err
}

// execute is Execute, filling in res (left zero when the run fails);
// timed says whether to measure Result.Duration (Run does not report it,
// and reading the clock is a good part of a short run's cost).
func (p *Program) execute(opts *RunOptions, res *Result, timed bool) error {
	if opts == nil {
		opts = &RunOptions{}
	}
	if p.closed() {
		return fmt.Errorf("run %s: %w", p.name, ErrClosed)
	}
	cpu, on, err := p.runCPU(opts)
	if err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	if err := p.traceRun(opts); err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	if opts.Net != nil {
		if err := opts.Net.Validate(); err != nil {
			return fmt.Errorf("run %s: %w", p.name, err)
		}
	}
	in := runner.Input{Data: opts.Data, DataOut: opts.DataOut, Repeat: opts.Repeat, RunContext: opts.RunContext, Timed: timed, OnCPU: on, CPU: cpu, Net: opts.Net, Trace: opts.Trace}
	if opts.Context != nil {
		b, err := contextBytes(opts.Context)
		if err != nil {
			return fmt.Errorf("run %s: %w", p.name, err)
		}
		in.Context, in.HasContext = b, true
	}
	var ctxOut []byte
	if opts.ContextOut != nil {
		if b, ok := opts.ContextOut.([]byte); ok {
			in.ContextOut = b
		} else {
			ctxOut = make([]byte, p.run.Type.ContextSize)
			in.ContextOut = ctxOut
		}
	}
	var out runner.Output
	if err := runner.Run(p.run, &in, &out); err != nil {
		return fmt.Errorf("run %s: %w", p.name, p.explainPoison(err))
	}
	if ctxOut != nil {
		if err := writeContext(opts.ContextOut, ctxOut); err != nil {
			return fmt.Errorf("run %s: %w", p.name, err)
		}
	}
	res.R0, res.Duration, res.DataSize = out.R0, out.Duration, out.DataSize
	if rd := out.Redirect; rd.Valid {
		res.Redirect = Redirect{Map: p.mapOf(rd.Map), Key: rd.Key, Flags: rd.Flags, Valid: true, Peer: rd.Peer, Neigh: rd.Neigh, NextHop: rd.NextHop, Socket: rd.Socket}
	}
	res.Clones, res.Tunnel, res.Signals, res.Buffer, res.Selected = out.Clones, out.Tunnel, out.Signals, out.Buffer, out.Selected
	return nil
}

// explainPoison adds to a run error of an unverified program that reached
// an instruction CO-RE poisoned (the only dead code such a program has)
// what poisoned it.
func (p *Program) explainPoison(err error) error {
	var re *vm.RunError
	if len(p.opts.poisons) == 0 || p.run.Verified || !errors.As(err, &re) || !errors.Is(err, vm.ErrDeadCode) {
		return err
	}
	// Instruction indexes are the loaded program's unless the rewrite
	// moved them (expanding may_goto).
	if len(p.xlated) == len(p.insns) {
		for _, ps := range p.opts.poisons {
			if ps.Insn == re.PC {
				return fmt.Errorf("%w (instruction %d poisoned by CO-RE: the target BTF cannot satisfy %s)", err, ps.Insn, ps.Relocation)
			}
		}
	}
	return fmt.Errorf("%w (an instruction poisoned by CO-RE: the target BTF cannot satisfy its relocation)", err)
}

// mapOf returns the *Map of a map a run of p used (nil for nil).
func (p *Program) mapOf(m maps.Map) *Map {
	if m == nil {
		return nil
	}
	for _, mm := range p.maps {
		if mm.m == m && !mm.closed.Load() {
			return mm
		}
	}
	// A map reached through a map of maps, or one whose reference the
	// program's collection closed (the program outlives it, pinned or
	// cloned): a view, its creator's to close.
	return &Map{name: m.Spec().Name, m: m, ncpu: p.run.CPUs.Len(), view: true}
}

// NativeCode returns the machine code of a program the JIT compiled and the
// offset in it of every instruction of XlatedInstructions, for
// disassembly; ok is false when the program runs on the interpreter.
func (p *Program) NativeCode() (code []byte, offsets []uint32, ok bool) {
	jp, isJIT := p.run.Engine.(*amd64.Program)
	if !isJIT || p.closed() {
		return nil, nil, false
	}
	code, offsets = jp.Code(p.run.Checked)
	return code, offsets, code != nil
}

// Task is the task the bpf_get_current_* helpers describe
// (ProgramOptions.Task).
type Task = runner.Task

func releaseMaps(ms []*Map) {
	for _, m := range ms {
		m.m.Release()
	}
}
