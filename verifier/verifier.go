package verifier

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// Limits, as in the kernel.
const (
	// MaxProcessed is BPF_COMPLEXITY_LIMIT_INSNS: instructions processed
	// over all paths.
	MaxProcessed = 1_000_000
	// MaxUnprivInsns is the program size limit for unprivileged loads.
	MaxUnprivInsns = 4096
	// MaxStack is the stack of all frames of a call chain together.
	MaxStack = 512
	// MaxCallFrames is the depth of bpf-to-bpf calls.
	MaxCallFrames = 8
	// maxPending bounds the branches waiting to be explored
	// (BPF_COMPLEXITY_LIMIT_JMP_SEQ).
	maxPending = 8192
)

// ErrRejected is wrapped by every verification failure.
var ErrRejected = errors.New("program rejected by the verifier")

// ErrInternal is wrapped by errors that report a bug in the verifier itself
// (a panic during verification), as opposed to a rejected program.
var ErrInternal = errors.New("internal verifier error")

// InternalError is a panic inside the verifier, recovered: a verifier bug,
// not a verdict on the program. It wraps ErrInternal, never ErrRejected.
type InternalError struct {
	// Insn is the instruction being verified when the panic happened.
	Insn int
	// Panic is the value the verifier panicked with.
	Panic any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("verifier bug at insn %d: %v", e.Insn, e.Panic)
}

// Unwrap makes every InternalError an ErrInternal.
func (e *InternalError) Unwrap() error { return ErrInternal }

// Error is a verification failure at an instruction.
type Error struct {
	Insn int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap makes every Error an ErrRejected.
func (e *Error) Unwrap() error { return ErrRejected }

// Options control verification.
type Options struct {
	// Type is the program type; nil is progtype.Raw.
	Type *progtype.Type
	// Maps describes the maps by the index map loads carry.
	Maps []MapInfo
	// Helpers returns the prototype of a helper, or nil if the program may
	// not call it. Nil uses the built-in helpers (helper.Builtin).
	Helpers func(id int32) *Proto
	// Unprivileged applies the rules for loads without CAP_BPF: no pointer
	// leaks, no pointer comparisons, smaller limits, only the helpers the
	// type gives without privilege (progtype.CapNone).
	Unprivileged bool
	// StrictAlignment requires naturally aligned accesses everywhere, as
	// on a platform without efficient unaligned access.
	StrictAlignment bool
	// Flags are the program's load flags (ProgramSpec.Flags, the kernel's
	// prog_flags): the Flag constants.
	Flags uint32
	// LogLevel: 0 none, 1 instructions and states at branches, 2 the state
	// after every instruction; bit 2 (4) adds statistics.
	LogLevel int
	// LogSize is the log buffer in bytes, with the kernel's NUL (0:
	// unlimited). A log that outgrows it keeps its end, as the kernel's
	// rotating log, or its start with LogFixed (BPF_LOG_FIXED, 8) in
	// LogLevel, and verification fails with ErrLogTruncated, like the
	// kernel's ENOSPC (wrapping the rejection, if any);
	// Result.LogTrueSize says what would fit.
	LogSize int
	// Funcs is the program's BTF func_info: one record per function, in
	// order. Nil means the program has no BTF, which forbids LD_ABS and
	// tail calls in subprograms; global functions are verified on their
	// own against their prototypes.
	Funcs []FuncInfo
	// Lines is the program's BTF line_info, ordered by instruction: the
	// log shows the source lines, as the kernel's does.
	Lines []LineInfo
	// KernelTypes is the kernel's BTF (vmlinux): the types of the
	// pointers to kernel objects (PtrToBTFID) that kfuncs and tracing
	// contexts give, and what bpf_rdonly_cast's type ids name. Nil
	// refuses what needs it.
	KernelTypes *btf.Spec
	// Attach is the attach target of a tracing program
	// (progtype.Type.BTFArgs), found in KernelTypes (ResolveAttach).
	Attach *AttachTarget
}

// Program load flags (the kernel's BPF_F_* prog_flags) and what they do
// here, as in the kernel.
const (
	// FlagStrictAlignment requires aligned accesses, packet data taken
	// as starting 2 bytes past an aligned address (NET_IP_ALIGN).
	FlagStrictAlignment uint32 = 1 << 0
	// FlagAnyAlignment turns strict alignment off, even the platform's.
	FlagAnyAlignment uint32 = 1 << 1
	// FlagTestRndHi32 asks the kernel to fill the upper halves that 32-bit
	// operations leave undefined with random bits; bpfvm zero-extends
	// them, one of the behaviours that allows, so it changes nothing.
	FlagTestRndHi32 uint32 = 1 << 2
	// FlagTestStateFreq remembers a state at every prune point, as the
	// kernel's (its force_new_state): more states, fewer instructions.
	FlagTestStateFreq uint32 = 1 << 3
	// FlagSleepable asks for a sleepable program: LSM programs at the
	// sleepable hooks and iterators (progtype.Type.Sleepable, lsm.go).
	FlagSleepable uint32 = 1 << 4
	// FlagXDPHasFrags declares that an XDP program handles multi-buffer
	// packets; bpfvm's packets are linear, so it changes no verdict.
	FlagXDPHasFrags uint32 = 1 << 5
	// FlagXDPDevBoundOnly binds an XDP program to a device; without a
	// device (bpfvm has none) the kernel ignores it.
	FlagXDPDevBoundOnly uint32 = 1 << 6
	// FlagTestRegInvariants makes a broken register invariant an error,
	// as in the kernel (invariants.go); bpfvm's bounds are kept
	// consistent, so one would be a verifier bug.
	FlagTestRegInvariants uint32 = 1 << 7

	knownFlags = FlagStrictAlignment | FlagAnyAlignment | FlagTestRndHi32 | FlagTestStateFreq |
		FlagSleepable | FlagXDPHasFrags | FlagXDPDevBoundOnly | FlagTestRegInvariants
)

// LogFixed in Options.LogLevel keeps the start of a log that outgrows
// LogSize instead of its end (the kernel's BPF_LOG_FIXED).
const LogFixed = 8

// ErrLogTruncated is returned when the log did not fit Options.LogSize.
var ErrLogTruncated = errors.New("verifier log truncated")

// Stats describe the cost of a verification, as the kernel reports them.
type Stats struct {
	Duration          time.Duration
	Processed         int   // instructions processed over all paths
	TotalStates       int   // states remembered for pruning
	PeakStates        int   // most states remembered at once
	MaxStatesPerInsn  int   // most states remembered at one instruction
	MarkRead          int   // read marks propagated
	StackDepth        []int // per function, bytes
	HistoryAllocs     int   // jump-history allocations
	HistoryEntries    int   // jump-history entries recorded
	HistoryPeak       int   // most jump-history entries held at once
	PeakMemory        int64 // bytes of verifier state at the peak
	PendingBranchPeak int   // most branches waiting at once
	// PrecisionFallbacks counts the times every scalar of a path was
	// marked precise: a precision walk that could not follow a value (an
	// indirect call), or a state covered by one whose marks are not final
	// yet (inside a loop still being explored, backedge.go).
	PrecisionFallbacks int
}

// InsnAux holds what verification learned about one instruction, for the
// rewrite that follows (the kernel's bpf_insn_aux_data).
type InsnAux struct {
	// Seen is set for instructions verification reached.
	Seen bool
	// PtrType is the pointer type a load or store went through (the same
	// on every path, or the access is rejected).
	PtrType RegType
	// Ctx is the context field a load or store accessed.
	Ctx *progtype.Field
	// Sock is the socket field (struct bpf_sock) a load through a socket
	// pointer read, for the loads the kernel converts (NoneMinusOne).
	Sock *progtype.Field
	// Probe marks a load through a pointer to a kernel object (PtrToBTFID,
	// untrusted memory) on some path: the kernel's BPF_PROBE_MEM, which
	// reads 0 where nothing is mapped instead of faulting.
	Probe bool
	// ArenaZext marks a 64-bit ALU instruction on an arena pointer: its
	// result keeps only the low 32 bits (the kernel's needs_zext), which
	// the rewrite adds (rewrite.ZextArena).
	ArenaZext bool
	// Map is the map a helper call at this instruction used on every path,
	// or nil when paths disagree or it is unknown (for inlining lookups).
	Map *MapInfo
	// MapConflict is set when paths called with different maps.
	MapConflict bool
	// ConstKey is the constant key of a map lookup when every path agrees
	// (HasConstKey); ConstKeyConflict is set once a path disagreed.
	ConstKey         uint64
	HasConstKey      bool
	ConstKeyConflict bool
	// LoopCallback is 1 + the first instruction of the callback a bpf_loop
	// call passed on every path with flags 0 (for inlining the loop), 0
	// when there is none; LoopNoInline is set when paths disagreed.
	LoopCallback int
	LoopNoInline bool
}

// Result is the outcome of a successful verification.
type Result struct {
	Log   string
	Stats Stats
	Aux   []InsnAux
	// LogTrueSize is the buffer the whole log needs (its bytes and a
	// NUL), the kernel's log_true_size: with LogSize at least this, the
	// log is not truncated.
	LogTrueSize int
	// MaxCtxOffset is the end of the furthest context access the program
	// makes (the kernel's max_ctx_offset): how much of a raw tracepoint's
	// arguments it reads.
	MaxCtxOffset uint32
	// MaxTPAccess is the end of the furthest access to a
	// raw_tracepoint_writable program's buffer (the kernel's
	// max_tp_access): how much of it the tracepoint must give.
	MaxTPAccess uint32
}

// Verify checks that insns is safe to run. Map loads are LD_IMM64 with a map
// pseudo source and the map's index in opts.Maps as immediate. On failure
// the error is an *Error (wrapping ErrRejected) and the log so far is in the
// returned Result. A bug in the verifier is an *InternalError (wrapping
// ErrInternal) instead of a panic.
func Verify(insns []isa.Instruction, opts Options) (*Result, error) {
	return verify(insns, opts, false, nil)
}

// verify is Verify; exact compares every scalar and stack slot, for tests
// that check precision tracking and stack liveness against it, and hook,
// when set, is called before each instruction is processed (tests force
// internal errors with it).
func verify(insns []isa.Instruction, opts Options, exact bool, hook func(pc int)) (*Result, error) {
	start := time.Now()
	v := newVerifier(insns, opts)
	v.exact, v.hook = exact, hook
	err := v.runRecovered()
	v.stats.Duration = time.Since(start)
	if opts.LogLevel != 0 {
		v.logStats(opts.LogLevel&4 != 0)
	}
	res := &Result{Log: v.log.String(), Stats: v.stats, Aux: v.aux, LogTrueSize: v.log.trueSize(), MaxCtxOffset: v.maxCtx, MaxTPAccess: v.maxTP}
	if v.log.truncated() {
		// The kernel's ENOSPC, which it returns for rejected programs
		// too; the rejection stays in the chain (errors.As an *Error).
		if err == nil {
			err = ErrLogTruncated
		} else {
			err = fmt.Errorf("%w (%w)", err, ErrLogTruncated)
		}
	}
	return res, err
}

// verifier is the state of one verification.
type verifier struct {
	insns []isa.Instruction
	opts  Options
	pt    *progtype.Type
	// strictAlign is the kernel's env->strict_alignment.
	strictAlign bool
	// sleepable says the program may sleep (FlagSleepable): it runs
	// outside an RCU read section (lsm.go).
	sleepable bool
	subs      []subprog
	funcs     []funcMeta // by subprog, from Options.Funcs (global.go)
	excb      int        // the exception callback's function, 0 for none (throw.go)
	arena     *MapInfo   // the program's arena, nil for none (arena.go)
	aux       []InsnAux
	log       logger
	stats     Stats
	maxCtx    uint32 // Result.MaxCtxOffset
	maxTP     uint32 // Result.MaxTPAccess

	cur     *State
	pc      int
	pending []pending
	nextID  uint32

	live          []regSet // registers live before each instruction
	stackLive     []uint64 // own stack slots live before each instruction (nil: not computed yet)
	stateBytes    int64    // bytes of remembered states alive
	prunePoints   []bool
	jmpPoints     []bool // where a path's jump history gets an entry (prune.go)
	callbackSites []bool // helper calls that take a callback
	explored      [][]*explored
	states        int // remembered states alive
	// jumps counts the jump instructions processed; lastAddJumps and
	// lastAddInsns are the counts when a state was last remembered.
	jumps                      int
	marks                      int // precision marks set, to see when tracing adds nothing
	lastAddJumps, lastAddInsns int
	// jmpHist counts the entries the kernel would have in the current
	// path's jump history since its last remembered state, jmpCounted
	// whether the instruction being processed has one (prune.go).
	jmpHist    int
	jmpCounted bool
	stateFreq  bool // BPF_F_TEST_STATE_FREQ: a state at every prune point
	// regInvariants (BPF_F_TEST_REG_INVARIANTS) checks the scalars after
	// every instruction (invariants.go).
	regInvariants bool
	// ret is a return to the caller the instruction being verified may
	// make without an exit (queueReturn), taken once it is verified.
	ret *earlyReturn

	aluCache aluCache // alu_cache.go
	// btfTypes is the table of the types PtrToBTFID registers point to,
	// by Reg.BTF-1, and btfIndex their indexes (btfptr.go).
	btfTypes []btfEntry
	btfIndex map[btf.Type]uint32
	// fields are the special fields of the maps' values (fields.go).
	fields map[fieldsKey][]maps.Field
	// kptrTypes are the kernel structs kptrs point to, by name
	// (fields.go).
	kptrTypes map[string]btf.Type
	free      []*State // states to reuse (state.go)
	exact     bool     // compare every scalar and slot (tests)
	hook      func(pc int)

	// The instruction history of the current path (precise.go).
	hist []histEntry
	// procPC is the instruction being processed, prevPC the one before
	// it on this path (-1 at the start), nextPC the one that follows
	// prevPC without a jump; segLast is the last instruction processed
	// since the current state's remembered parent (-1: none); curEntry is
	// the history entry of the instruction being processed (-1: none).
	procPC, prevPC, nextPC, segLast, curEntry int
}

// pending is a branch waiting to be explored.
type pending struct {
	st   *State
	pc   int
	from int
	// histLen is the length of the instruction history at the branch,
	// jmpHist the count of the kernel's jump history then.
	histLen, jmpHist int
	// logPos is where the log was at the branch: level 1 rewinds there
	// when the path before it ends, as the kernel's pop_stack.
	logPos int
}

func newVerifier(insns []isa.Instruction, opts Options) *verifier {
	pt := opts.Type
	if pt == nil {
		pt = progtype.Raw
	}
	v := &verifier{insns: insns, opts: opts, pt: pt, aux: make([]InsnAux, len(insns))}
	v.sleepable = opts.Flags&FlagSleepable != 0
	if opts.Attach != nil && opts.Attach.Hook != "" {
		// An LSM program's helpers are its hook's.
		v.pt = v.pt.ForTarget(opts.Attach.Hook, v.sleepable)
	}
	v.strictAlign = (opts.StrictAlignment || opts.Flags&FlagStrictAlignment != 0) && opts.Flags&FlagAnyAlignment == 0
	v.log = logger{level: opts.LogLevel & 3, limit: opts.LogSize, fixed: opts.LogLevel&LogFixed != 0, lines: opts.Lines}
	return v
}

func (v *verifier) errorf(pc int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	v.log.printf("%s\n", msg)
	return &Error{Insn: pc, Msg: msg}
}

func (v *verifier) newID() uint32 {
	v.nextID++
	return v.nextID
}

// runRecovered is run, with a panic turned into an *InternalError naming
// the instruction being verified: bad input must never crash the host, and
// the caller can tell the verifier's bug from a rejection.
func (v *verifier) runRecovered() (err error) {
	defer func() {
		if p := recover(); p != nil {
			ie := &InternalError{Insn: v.procPC, Panic: p, Stack: debug.Stack()}
			v.log.printf("%v\n", ie)
			err = ie
		}
	}()
	return v.run()
}

func (v *verifier) run() error {
	if f := v.opts.Flags &^ knownFlags; f != 0 {
		// The kernel refuses these before verifying, with EINVAL.
		return v.errorf(0, "unknown program flags %#x", f)
	}
	if err := isa.Validate(v.insns); err != nil {
		var ie *isa.InstructionError
		if errors.As(err, &ie) {
			return v.errorf(ie.Index, "%v", ie.Err)
		}
		return v.errorf(0, "%v", err)
	}
	if v.opts.Unprivileged && len(v.insns) > MaxUnprivInsns {
		return v.errorf(0, "program of %d instructions is too large (limit %d for unprivileged programs)", len(v.insns), MaxUnprivInsns)
	}
	v.subs = findSubprogs(v.insns)
	if v.opts.Unprivileged && len(v.subs) > 1 {
		// Without CAP_BPF there are no functions besides the entry (and
		// so no callbacks), and no loops.
		return v.errorf(v.subs[1].Start, "loading/calling other bpf or kernel functions are allowed for CAP_BPF and CAP_SYS_ADMIN")
	}
	if err := v.findExceptionCB(); err != nil {
		return err
	}
	if err := v.checkFuncInfo(); err != nil {
		return err
	}
	v.markExceptionCB()
	if err := checkCFG(v.insns, v.subs, !v.opts.Unprivileged); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return v.errorf(e.Insn, "%s", e.Msg)
		}
		return err
	}
	if err := v.checkLdImm64(); err != nil {
		return err
	}
	if err := v.checkSleepable(); err != nil {
		return err
	}
	v.cur = v.initialState()
	v.prunePoints, v.jmpPoints = findPrunePoints(v.insns)
	v.stateFreq = v.opts.Flags&FlagTestStateFreq != 0
	v.regInvariants = v.opts.Flags&FlagTestRegInvariants != 0
	v.callbackSites = make([]bool, len(v.insns))
	for pc, ins := range v.insns {
		if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallHelper) {
			continue
		}
		if p := v.proto(ins.Imm); p != nil && slices.Contains(p.Args[:], ArgCallback) {
			v.callbackSites[pc] = true
			v.prunePoints[pc], v.jmpPoints[pc] = true, true
		}
	}
	v.explored = make([][]*explored, len(v.insns))
	v.stats.StackDepth = make([]int, len(v.subs))
	v.pc = 0
	err := v.explore()
	if err == nil {
		err = v.verifyGlobals()
	}
	if err == nil {
		err = v.checkThrowSites()
	}
	if err == nil {
		err = v.checkStackDepth()
	}
	for i, s := range v.subs {
		v.stats.StackDepth[i] = s.StackDepth
	}
	return err
}

// initialState is the state at program entry: R1 holds the context (or,
// for programs without one, the input pointer and R2 its length), R10 the
// frame pointer.
func (v *verifier) initialState() *State {
	f := &Frame{CallSite: -1}
	for i := range f.Regs {
		f.Regs[i] = Reg{Type: NotInit}
	}
	if v.pt.ContextSize > 0 {
		f.Regs[1] = Reg{Type: PtrToCtx}
	} else {
		// Without a context R1 points at input memory of R2 bytes; R2 is
		// unknown, so accesses through R1 need bounds proven against it,
		// which only the checked interpreter can do. Model R1 as memory of
		// size 0 so that programs must not dereference it unverified.
		f.Regs[1] = Reg{Type: PtrToMem}
		f.Regs[2] = unknownScalar()
	}
	f.Regs[1].Scalar = Const(0)
	f.Regs[10] = Reg{Type: PtrToStack, Scalar: Const(0)}
	st := &State{pool: &framePool{}}
	st.pushFrame(f)
	return st
}

// checkLdImm64 checks the pseudo sources of LD_IMM64 instructions.
func (v *verifier) checkLdImm64() error {
	// The cgroup storage of each kind (shared, per-CPU) the program uses:
	// one map at most (the kernel's bpf_cgroup_storage_assign).
	storage := [2]int{-1, -1}
	for pc := 0; pc < len(v.insns); pc++ {
		ins := v.insns[pc]
		if !ins.IsLdImm64() {
			continue
		}
		switch uint8(ins.Src) {
		case 0, isa.PseudoFunc:
		case isa.PseudoMapFD, isa.PseudoMapValue, isa.PseudoMapIdx, isa.PseudoMapIdxValue:
			if ins.Imm < 0 || int(ins.Imm) >= len(v.opts.Maps) {
				return v.errorf(pc, "fd %d is not pointing to valid bpf_map", ins.Imm)
			}
			if v.sleepable && !sleepableMap(v.opts.Maps[ins.Imm].Spec.Type) {
				return v.errorf(pc, "Sleepable programs can only use array, hash, ringbuf and local storage maps")
			}
			if err := v.checkArenaMap(pc, ins.Imm); err != nil {
				return err
			}
			if t := v.opts.Maps[ins.Imm].Spec.Type; t == maps.CgroupStorage || t == maps.PerCPUCgroupStorage {
				k := 0
				if t.PerCPU() {
					k = 1
				}
				if storage[k] >= 0 && storage[k] != int(ins.Imm) {
					return v.errorf(pc, "only one cgroup storage of each type is allowed")
				}
				storage[k] = int(ins.Imm)
			}
		default:
			return v.errorf(pc, "unrecognized bpf_ld_imm64 insn")
		}
		pc++
	}
	return nil
}
