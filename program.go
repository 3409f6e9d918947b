package bpfvm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"

	"bpfvm/interp"
	"bpfvm/isa"
	"bpfvm/jit/amd64"
	"bpfvm/maps"
	"bpfvm/progtype"
	"bpfvm/verifier"
	"bpfvm/vm"
)

// ethHeader is the size of an Ethernet header, which socket filters do not
// see.
const ethHeader = 14

// Errors returned by this package.
var (
	// ErrNotSupported is returned for program types, map types and features
	// bpfvm does not implement.
	ErrNotSupported = progtype.ErrNotSupported
	// ErrClosed is returned, wrapped, by every operation on a closed
	// program, map, collection or ring buffer reader. It also matches
	// os.ErrClosed and unix.EBADF, what cilium/ebpf returns for a closed
	// file descriptor.
	ErrClosed = maps.ErrClosed
	// ErrPermission is returned, wrapped, by a Go-side write to a frozen
	// or BPF_F_RDONLY map and a read of a BPF_F_WRONLY one, as the kernel's
	// EPERM. It also matches os.ErrPermission and unix.EPERM.
	ErrPermission = maps.ErrPermission
	// ErrBusy is returned, wrapped, by Map.Freeze during a Go-side write,
	// as the kernel's EBUSY; it also matches unix.EBUSY.
	ErrBusy = maps.ErrBusy
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
	// LogLevel selects the verifier log (see verifier.Options). LogSize is
	// the log buffer to start with (0: unlimited); when the log does not
	// fit, the buffer is doubled and the program verified again, as
	// cilium/ebpf does with the kernel.
	LogLevel int
	LogSize  int
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
	name   string
	typ    ebpf.ProgramType
	pt     *progtype.Type
	insns  []isa.Instruction // as loaded, map references by index into maps
	maps   []*Map
	engine engineProgram
	kind   Engine // the engine that runs: EngineInterpreter or EngineJIT
	jit    JITInfo
	opts   ProgramOptions

	regions []vm.Region // map value memory, for checked accesses
	// strValues are the values of the read-only single-value arrays,
	// which bound the constant strings helpers read (constString).
	strValues []vm.Region

	// VerifierLog is the verifier's log (with ProgramOptions.LogLevel > 0).
	VerifierLog string
	verified    bool
	// checked says accesses are validated at run time: always for
	// unverified programs, for verified ones with ProgramOptions.Checks.
	checked bool
	xlated  []isa.Instruction // after rewriting
	// xlatedLines and xlatedFuncs are the BTF line and func info moved to
	// the rewritten instructions (nil when not rewritten).
	xlatedLines []verifier.LineInfo
	xlatedFuncs []verifier.FuncInfo
	// xlatedAux are the verifier's facts, aligned with xlated.
	xlatedAux []verifier.InsnAux
	// ctxInsns and aux are the verified program with context accesses
	// rewritten and the verifier's facts, which inlining starts from.
	ctxInsns []isa.Instruction
	aux      []verifier.InsnAux
	stats    verifier.Stats
	cpus     *cpus
	ownCPUs  bool // a standalone program closes its runners

	id   uint32      // in the live-program table (helpers_tailcall.go)
	tail vm.TailCall // what bpf_tail_call returns to jump here

	closed atomic.Bool  // the user's reference is gone
	refs   atomic.Int32 // the user's, plus one per prog_array slot
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
}

// Result is what Execute returns about a run.
type Result struct {
	// R0 is the full 64-bit value of R0 at exit.
	R0 uint64
	// Duration is the mean time per run.
	Duration time.Duration
	// DataSize is the size of the output packet.
	DataSize int
	// Redirect records a bpf_redirect or bpf_redirect_map call of the last
	// run, whose return value then says XDP_REDIRECT or TC_ACT_REDIRECT.
	Redirect Redirect
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
}

// NewProgram loads a single program that references no maps.
func NewProgram(spec *ebpf.ProgramSpec) (*Program, error) {
	return NewProgramWithOptions(spec, ProgramOptions{})
}

// NewProgramWithOptions loads a single program that references no maps.
func NewProgramWithOptions(spec *ebpf.ProgramSpec, opts ProgramOptions) (*Program, error) {
	insns, refs, funcs, err := convertFuncs(spec)
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", spec.Name, err)
	}
	if funcs != nil {
		opts.Funcs = funcs
	}
	if lines := lineInfos(spec); lines != nil {
		opts.Lines = lines
	}
	if len(refs) > 0 {
		return nil, fmt.Errorf("program %s references map %s: load it with NewCollection", spec.Name, refs[0])
	}
	opts.flags = spec.Flags
	return newProgram(spec.Name, spec.Type, insns, nil, nil, opts)
}

// NewRawProgram loads instructions of the given type without an ELF object,
// e.g. assembled text or a conformance test. Map references are not allowed.
func NewRawProgram(name string, typ ebpf.ProgramType, insns []isa.Instruction, opts ProgramOptions) (*Program, error) {
	return newProgram(name, typ, insns, nil, nil, opts)
}

func newProgram(name string, typ ebpf.ProgramType, insns []isa.Instruction, maps []*Map, c *cpus, opts ProgramOptions) (_ *Program, err error) {
	// The program holds a reference to each of its maps for as long as its
	// code may run.
	for i, m := range maps {
		if m.closed.Load() || !m.m.Acquire() {
			releaseMaps(maps[:i])
			return nil, fmt.Errorf("program %s: map %s: %w", name, m.name, ErrClosed)
		}
	}
	defer func() {
		if err != nil {
			releaseMaps(maps)
		}
	}()
	pt := opts.Type
	if pt != nil {
		if err := pt.Validate(); err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
	} else {
		var err error
		if pt, err = typeOf(typ); err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
	}
	if err := checkHelpers(insns, pt); err != nil {
		return nil, fmt.Errorf("program %s: %w", name, err)
	}
	if err := checkKfuncs(insns); err != nil {
		return nil, fmt.Errorf("program %s: %w", name, err)
	}
	if opts.Engine != EngineDefault && opts.Engine != EngineInterpreter && opts.Engine != EngineJIT {
		return nil, fmt.Errorf("program %s: engine %s: %w", name, opts.Engine, ErrNotSupported)
	}
	if opts.Checks < ChecksDefault || opts.Checks > ChecksOff {
		return nil, fmt.Errorf("program %s: checks %s: %w", name, opts.Checks, ErrNotSupported)
	}
	p := &Program{name: name, typ: typ, pt: pt, insns: insns, maps: maps, opts: opts, cpus: c}
	if c == nil {
		p.cpus, p.ownCPUs = newCPUs(0), true
		defer func() {
			if err != nil {
				p.cpus.close()
			}
		}()
	}
	if err := isa.Validate(insns); err != nil {
		return nil, fmt.Errorf("program %s: %w", name, err)
	}
	p.xlated = insns
	if err := p.verify(); err != nil {
		return nil, fmt.Errorf("program %s: %w", name, err)
	}
	p.checked = !p.verified || opts.checked()
	if err := p.expandMayGoto(); err != nil {
		return nil, fmt.Errorf("program %s: %w", name, err)
	}
	resolved, err := p.resolve()
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", name, err)
	}
	// JIT engine selection: compile to machine code when asked to, and
	// fall back to the interpreter when the JIT cannot compile the program.
	p.kind = EngineInterpreter
	if opts.Engine == EngineJIT || opts.Engine == EngineDefault {
		// Verified programs run unchecked unless Checks asks otherwise,
		// others checked.
		mode := amd64.Checked
		if !p.checked {
			mode = amd64.Unchecked
		}
		// Out of executable memory in both tiers, or any other reason
		// the JIT cannot compile: the interpreter runs it.
		jo := opts.JIT
		if jp, err := amd64.Compile(resolved, p.helper, amd64.Options{
			Modes: mode, Natives: p.native, Memory: jo.Memory, Unprivileged: opts.Unprivileged,
			Far: jo.Far, Retpoline: jo.Retpoline, Blind: jo.Blind || opts.Unprivileged,
			Budgeted: opts.Budget != 0, NonStack: p.nonStack(),
		}); err == nil {
			p.engine, p.kind = jp, EngineJIT
			p.jit = jp.Info(mode == amd64.Checked)
		}
	}
	if p.engine == nil {
		if opts.Engine != EngineInterpreter && p.verified {
			// Rewritten for the JIT, which could not take it: every
			// rewrite again, in the same order.
			if err := p.inline(EngineInterpreter); err != nil {
				return nil, fmt.Errorf("program %s: %w", name, err)
			}
			if err := p.expandMayGoto(); err != nil {
				return nil, fmt.Errorf("program %s: %w", name, err)
			}
			if resolved, err = p.resolve(); err != nil {
				return nil, fmt.Errorf("program %s: %w", name, err)
			}
		}
		ip, err := interp.New(resolved, p.helper)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
		p.engine = ip
	}
	for _, m := range maps {
		p.regions = append(p.regions, m.m.Memory()...)
		p.regions = append(p.regions, m.kernelFields())
		if readOnlyValue(m.m) != nil {
			p.strValues = append(p.strValues, vm.Region{Start: m.m.Memory()[0].Start, End: m.m.Memory()[0].Start + uint64(m.m.Spec().ValueSize)})
		}
		if p.verified && p.checked {
			// What the inlined lookups read (verify.go, inline).
			p.regions = append(p.regions, m.internalRegions()...)
		}
	}
	p.register()
	return p, nil
}

// checkHelpers rejects calls to helpers the program type does not allow.
func checkHelpers(insns []isa.Instruction, pt *progtype.Type) error {
	if pt.Helpers == nil {
		return nil
	}
	for i, ins := range insns {
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && !pt.Helpers(ins.Imm) {
			return fmt.Errorf("insn %d: program of type %s may not call helper %s#%d", i, pt.Name, isa.HelperName(ins.Imm), ins.Imm)
		}
	}
	return nil
}

// resolve replaces map references (LD_IMM64 with a map pseudo source and
// the map's index in p.maps as immediate) with map handles and value
// addresses, as the kernel does after verification.
func (p *Program) resolve() ([]isa.Instruction, error) {
	out := make([]isa.Instruction, len(p.xlated))
	copy(out, p.xlated)
	kfuncsToHelpers(out)
	for i := 0; i < len(out); i++ {
		ins := out[i]
		if !ins.IsLdImm64() {
			continue
		}
		src := uint8(ins.Src)
		if src == isa.PseudoMapField {
			// A header field an inlined lookup reads (rewrite's seq.field).
			idx, off, size := int(ins.Imm), uint64(uint32(out[i+1].Imm)), uint64(ins.Off)
			if idx < 0 || idx >= len(p.maps) || off+size > maps.HeaderFieldBytes || size != 4 && size != 8 {
				return nil, fmt.Errorf("insn %d: map field %d+%d of size %d out of range", i, idx, off, size)
			}
			v := vm.LoadSized(p.maps[idx].m.Handle()+maps.HeaderFields+off, size)
			pair := isa.LdImm64(ins.Dst, 0, v)
			out[i], out[i+1] = pair[0], pair[1]
			i++
			continue
		}
		if src != isa.PseudoMapFD && src != isa.PseudoMapValue {
			if src != 0 && src != isa.PseudoFunc {
				return nil, fmt.Errorf("insn %d: ld_imm64 pseudo source %d: %w", i, src, ErrNotSupported)
			}
			i++
			continue
		}
		idx := int(ins.Imm)
		if idx < 0 || idx >= len(p.maps) {
			return nil, fmt.Errorf("insn %d: map index %d out of range", i, idx)
		}
		m := p.maps[idx].m
		var v uint64
		if src == isa.PseudoMapFD {
			v = m.Handle()
		} else {
			off := uint64(uint32(out[i+1].Imm))
			spec := m.Spec()
			if off >= uint64(spec.ValueSize) {
				return nil, fmt.Errorf("insn %d: offset %d outside value of map %s", i, off, spec.Name)
			}
			base, err := directValue(m)
			if err != nil {
				return nil, fmt.Errorf("insn %d: %w", i, err)
			}
			v = base + off
		}
		pair := isa.LdImm64(ins.Dst, 0, v)
		out[i], out[i+1] = pair[0], pair[1]
		i++
	}
	return out, nil
}

// Name returns the program's name.
func (p *Program) Name() string { return p.name }

// Type returns the program's type.
func (p *Program) Type() ebpf.ProgramType { return p.typ }

// ContextSize is the size of the program type's context structure: what
// RunOptions.ContextOut receives (0 for programs without one).
func (p *Program) ContextSize() int { return int(p.pt.ContextSize) }

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

// Close releases the user's reference to the program (see Program). Runs
// in progress finish; closing twice, or concurrently with anything, is
// safe.
func (p *Program) Close() error {
	if !p.closed.Swap(true) {
		p.release()
	}
	return nil
}

// acquire takes a reference for a prog_array slot; false once the last
// reference is gone.
func (p *Program) acquire() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference. The last one makes the program unreachable
// for tail calls and frees it once no run can be inside it.
func (p *Program) release() {
	if p.refs.Add(-1) != 0 {
		return
	}
	p.unregister()
	maps.Defer(p.free)
}

// free releases the code, the runners of a standalone program and the
// references to the maps.
func (p *Program) free() {
	if p.ownCPUs {
		p.cpus.close()
	}
	if c, ok := p.engine.(io.Closer); ok {
		c.Close() // JIT machine code
	}
	releaseMaps(p.maps)
}

func releaseMaps(ms []*Map) {
	for _, m := range ms {
		m.m.Release()
	}
}

// programRefs gives prog_array slots references to programs by id.
type programRefs struct{}

func (programRefs) Acquire(id uint32) bool {
	p := programByID(id)
	return p != nil && p.acquire()
}

func (programRefs) Release(id uint32) {
	if p := programByID(id); p != nil {
		p.release()
	}
}

// Engine returns the engine that runs the program: EngineInterpreter or
// EngineJIT (which may differ from ProgramOptions.Engine when the JIT could
// not compile the program).
func (p *Program) Engine() Engine { return p.kind }

// JITInfo describes the program's machine code; its Tier is TierNone when
// the program runs on the interpreter (also when executable memory ran
// out in both tiers, which never fails a load).
func (p *Program) JITInfo() JITInfo { return p.jit }

// engineProgram is what Program needs of an engine: runs, and callbacks for
// helpers such as bpf_loop.
type engineProgram interface {
	Run(env *vm.Env, r1, r2, budget uint64) (uint64, error)
	Repeat(env *vm.Env, r1, r2, budget uint64, n uint32, between func() error) (uint64, error)
	Call(env *vm.Env, fn uint64, r1, r2, r3, r4, r5 uint64) (uint64, error)
}

// Run runs the program like BPF_PROG_TEST_RUN and returns the low 32 bits of
// R0, as the kernel does.
func (p *Program) Run(opts *RunOptions) (uint32, error) {
	var res Result
	err := p.execute(opts, &res, false)
	return uint32(res.R0), err
}

// Test runs the program once on in and returns its result and output packet.
func (p *Program) Test(in []byte) (uint32, []byte, error) {
	out := make([]byte, len(in)+headroom+tailroom)
	res, err := p.Execute(&RunOptions{Data: in, DataOut: out})
	if err != nil {
		return 0, nil, err
	}
	return uint32(res.R0), out[:res.DataSize], nil
}

// Benchmark runs the program repeat times on in and returns its result and
// the mean duration of one run.
func (p *Program) Benchmark(in []byte, repeat int, reset func()) (uint32, time.Duration, error) {
	if repeat < 0 || repeat > 1<<32-1 {
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
//
// Repetitions run as in the kernel's test run: on the same context and
// packet, each seeing what the one before left (a packet moved by
// bpf_xdp_adjust_head stays moved), so the setup of the run is done once
// and a repetition resets only what the kernel resets per program run.
func (p *Program) execute(opts *RunOptions, res *Result, timed bool) error {
	if opts == nil {
		opts = &RunOptions{}
	}
	pt := p.pt
	if len(opts.Data) > maxPacket {
		return fmt.Errorf("run %s: %d bytes of data, at most %d", p.name, len(opts.Data), maxPacket)
	}
	if len(opts.Data) < pt.MinData {
		return fmt.Errorf("run %s: %d bytes of data, the %s program type needs at least %d", p.name, len(opts.Data), pt.Name, pt.MinData)
	}
	r, err := p.cpus.acquire(opts.RunContext)
	if err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	defer p.cpus.release(r)
	// Looked at inside the run's epoch: either Close's grace period waits
	// for this run, or this run sees the program closed.
	if p.closed.Load() {
		return fmt.Errorf("run %s: %w", p.name, ErrClosed)
	}
	ctxArea := p.contextArea()
	if err := r.memory(ctxArea + headroom + len(opts.Data) + tailroom); err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	r.prog = p

	buf := r.buf.Bytes()
	base := r.buf.Addr()
	ctx := buf[:ctxArea]
	if err := readContext(opts.Context, ctx[:pt.ContextSize], uint64(pt.ContextSize)); err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	if err := pt.CheckInput(ctx[:pt.ContextSize]); err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	var in []byte
	if opts.ContextOut != nil {
		in = bytes.Clone(ctx[:pt.ContextSize])
	}
	frame := buf[ctxArea+headroom : ctxArea+headroom+len(opts.Data)]
	copy(frame, opts.Data)
	pkt := frame
	if pt.NetworkHeader {
		pkt = frame[ethHeader:]
	}
	pktStart := base + uint64(ctxArea+headroom+len(frame)-len(pkt))
	// Field by field: a composite literal would be built on the stack
	// and copied with wide loads that stall on store forwarding.
	r.pkt.start, r.pkt.meta, r.pkt.data = base+uint64(ctxArea), pktStart, pktStart
	r.pkt.end, r.pkt.limit = pktStart+uint64(len(pkt)), pktStart+uint64(len(pkt))+tailroom
	if pt.Setup != nil {
		// The kernel's test run has a context when it is given one or
		// asked for one.
		if err := pt.Setup(ctx, frame, pkt, opts.Context != nil || opts.ContextOut != nil); err != nil {
			return fmt.Errorf("run %s: context: %w", p.name, err)
		}
	}
	if pt.MetaInput != nil {
		// The input starts with metadata in front of the packet.
		r.pkt.data += uint64(pt.MetaInput(ctx))
	}
	// Inputs the kernel stores in narrower fields lose their high bytes.
	pt.Truncate(ctx[:pt.ContextSize])
	r.startEnv(opts.RunContext)
	env := &r.env
	if len(frame) >= ethHeader {
		// Where negative LD_ABS/LD_IND offsets count from: the frame's
		// Ethernet header and what follows it, as in the kernel's test
		// run (which also counts a socket filter's from there).
		env.MacHeader = pktStart - uint64(len(frame)-len(pkt))
		env.NetHeader = env.MacHeader + ethHeader
	}
	var r1, r2 uint64
	if pt.ContextSize == 0 {
		r1, r2 = r.pkt.data, uint64(len(pkt))
		if len(pkt) == 0 {
			r1 = 0
		}
	} else {
		env.Ctx = vm.Region{Start: base, End: base + uint64(pt.ContextSize), Writable: true}
		if !p.verified {
			env.CtxAccess = ctxAccess
		}
		r1 = base
	}
	r.beginRun()
	repeat := max(opts.Repeat, 1)
	var start time.Time
	if timed {
		start = time.Now()
	}
	r0, err := p.engine.Repeat(env, r1, r2, p.opts.Budget, repeat, r.between)
	r.endRun()
	if err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	res.R0 = r0
	if timed {
		res.Duration = time.Since(start) / time.Duration(repeat)
	}
	res.Redirect = r.redirect
	// The kernel's XDP test run returns the metadata in front of the packet.
	outStart := r.pkt.data
	switch {
	case p.typ == ebpf.XDP:
		outStart = r.pkt.meta
	case pt.NetworkHeader:
		// Socket filters saw the packet from the network header, but the
		// kernel's test run returns the whole frame.
		outStart -= ethHeader
	}
	res.DataSize = int(r.pkt.end - outStart)
	if opts.DataOut != nil {
		out := unsafeBytes(outStart, r.pkt.end-outStart)
		if len(opts.DataOut) < len(out) {
			return fmt.Errorf("run %s: output packet of %d bytes does not fit DataOut of %d", p.name, len(out), len(opts.DataOut))
		}
		copy(opts.DataOut, out)
	}
	if opts.ContextOut != nil {
		pt.Output(ctx[:pt.ContextSize], in, r.pkt.meta, r.pkt.data, r.pkt.end)
	}
	if err := writeContext(opts.ContextOut, ctx[:pt.ContextSize]); err != nil {
		return fmt.Errorf("run %s: %w", p.name, err)
	}
	return nil
}

// NativeCode returns the machine code of a program the JIT compiled and the
// offset in it of every instruction of XlatedInstructions, for
// disassembly; ok is false when the program runs on the interpreter.
func (p *Program) NativeCode() (code []byte, offsets []uint32, ok bool) {
	jp, isJIT := p.engine.(*amd64.Program)
	if !isJIT || p.closed.Load() {
		return nil, nil, false
	}
	code, offsets = jp.Code(p.checked)
	return code, offsets, code != nil
}
