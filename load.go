package bpfvm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/jit/amd64"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/rewrite"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// newProgram is the load pipeline of one program, after the collection has
// made its maps: each stage is a function of the results of the ones
// before it.
//
//	program type → checks → verify → rewrite for an engine → resolve → engine → runnable
//
// The rewrite depends on the engine (inlining pays differently on each),
// so a program the JIT cannot compile is rewritten again for the
// interpreter.
func newProgram(name string, typ ebpf.ProgramType, insns []isa.Instruction, ms []*Map, c *runner.CPUs, opts ProgramOptions) (_ *Program, err error) {
	// The program holds a reference to each of its maps for as long as its
	// code may run: from here until the runnable program owns them.
	for i, m := range ms {
		if m.closed.Load() || !m.m.Acquire() {
			releaseMaps(ms[:i])
			return nil, fmt.Errorf("program %s: map %s: %w", name, m.name, ErrClosed)
		}
	}
	defer func() {
		if err != nil {
			releaseMaps(ms)
			err = fmt.Errorf("program %s: %w", name, err)
		}
	}()
	pt, err := programType(typ, opts)
	if err != nil {
		return nil, err
	}
	if pt.Trace != nil && opts.Unprivileged {
		// The kernel's is_perfmon_prog_type.
		return nil, fmt.Errorf("program type %s needs CAP_PERFMON: %w", pt.Name, ErrPermission)
	}
	hs := &helper.Set{Host: opts.Helpers, Protos: opts.HelperProtos, NoNatives: opts.JIT.NoNatives, Type: pt}
	if err := check(insns, opts); err != nil {
		return nil, structuralRejection(err, opts)
	}
	if err := typeHelpers(insns, pt, hs); err != nil {
		return nil, err
	}
	v, err := verify(insns, pt, ms, hs, opts)
	if err != nil {
		return nil, err
	}
	checked := v.aux == nil || opts.checked()
	run := &runner.Program{
		Name: name, Kind: typ, Type: pt, Verified: v.aux != nil, Checked: checked, MaxCtx: v.maxCtx, MaxTP: v.maxTP,
		FuncArgs: v.target.Slots(), FuncRet: v.target.HasReturn(), KernelTypes: v.kernelTypes,
		Budget: opts.Budget, Output: opts.Output, Task: opts.Task, CPUs: c,
	}
	if pt.Hook != nil {
		// The structures a netfilter test run lays out, at the offsets
		// of the BTF the program reads them with; a run without them
		// fails (runner.Run).
		kt := opts.KernelTypes
		if kt == nil {
			kt = defaultKernelTypes(opts)
		}
		run.Objects, _ = runner.ObjectsOf(kt)
	}
	if c == nil {
		run.CPUs, run.OwnCPUs = runner.NewCPUs(0), true
		defer func() {
			if err != nil {
				run.CPUs.Drop()
			}
		}()
	}
	e, err := build(insns, v, ms, hs, run, opts)
	if err != nil {
		return nil, err
	}
	run.Engine = e.engine
	if a := programArena(ms); a != nil {
		run.Arena, run.ArenaUser = a.Base(), a.UserStart()&^0xffff_ffff
	}
	for _, m := range ms {
		run.Maps = append(run.Maps, m.m)
		run.Regions = append(run.Regions, m.m.Memory()...)
		run.Regions = append(run.Regions, maps.KernelFieldsRegion(m.m))
		if readOnlyValue(m.m) != nil {
			v := m.m.Memory()[0].Start
			run.StrValues = append(run.StrValues, vm.Region{Start: v, End: v + uint64(m.m.Spec().ValueSize)})
		}
		if run.Verified && run.Checked {
			// What the inlined lookups read (rewriteFor).
			run.Regions = append(run.Regions, maps.InternalRegions(m.m)...)
		}
	}
	p := &Program{
		name: name, typ: typ, insns: insns, maps: ms, opts: opts, run: run, users: newRefCount(), ref: &progRef{},
		kind: e.kind, jit: e.info, xlated: e.x.insns, xlatedLines: e.x.lines, xlatedFuncs: e.x.funcs, stats: v.stats, VerifierLog: v.log,
	}
	run.Owner = p
	run.Start()
	return p, nil
}

// programType returns the description of the program's type: the host's
// (ProgramOptions.Type) or the kernel type's for the expected attach type.
func programType(typ ebpf.ProgramType, opts ProgramOptions) (*progtype.Type, error) {
	if pt := opts.Type; pt != nil {
		if err := pt.Validate(); err != nil {
			return nil, err
		}
		return pt, nil
	}
	return progtype.OfAttach(typ, opts.AttachType)
}

// structuralRejection makes a malformed program (isa.Validate's
// ErrInvalidProgram: a jump out of range, a missing exit) a VerifierError
// when it was to be verified, as the kernel's verifier finds the same in
// its first passes and logs the same message, before any instruction is
// processed.
func structuralRejection(err error, opts ProgramOptions) error {
	var ie *isa.InstructionError
	if opts.NoVerify || !errors.As(err, &ie) || !errors.Is(err, isa.ErrInvalidProgram) {
		return err
	}
	if opts.LogDisabled {
		return newVerifierError(err, "", false)
	}
	msg := strings.TrimPrefix(ie.Err.Error(), isa.ErrInvalidProgram.Error()+": ")
	stats := fmt.Sprintf("processed 0 insns (limit %d) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0", verifier.MaxProcessed)
	return newVerifierError(err, msg+"\n"+stats, false)
}

// check refuses what no engine loads: options out of range, malformed
// instructions, kfuncs bpfvm lacks.
func check(insns []isa.Instruction, opts ProgramOptions) error {
	if err := helper.CheckKfuncs(insns); err != nil {
		return err
	}
	if opts.Engine != EngineDefault && opts.Engine != EngineInterpreter && opts.Engine != EngineJIT {
		return fmt.Errorf("engine %s: %w", opts.Engine, ErrNotSupported)
	}
	if opts.Checks < ChecksDefault || opts.Checks > ChecksOff {
		return fmt.Errorf("checks %s: %w", opts.Checks, ErrNotSupported)
	}
	return isa.Validate(insns)
}

// typeHelpers refuses calls of the helpers the program type has a function
// of its own for that bpfvm lacks (progtype.Type.Unimplemented), verified
// or not: another function by the same id would run instead. A host
// helper of that id (ProgramOptions.Helpers) is the host's to give.
func typeHelpers(insns []isa.Instruction, pt *progtype.Type, hs *helper.Set) error {
	for pc, ins := range insns {
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && pt.Unimplemented[isa.HelperName(ins.Imm)] && hs.Host[ins.Imm] == nil {
			return fmt.Errorf("insn %d: %w %s (the %s program type's own)", pc, vm.ErrHelper, isa.HelperLabel(ins.Imm), pt.Name)
		}
	}
	return nil
}

// verified is the verifier's result: the facts about each instruction
// (nil when the program was not verified) and the program with its
// context accesses converted for unchecked execution, which every rewrite
// starts from.
type verified struct {
	aux      []verifier.InsnAux
	ctxInsns []isa.Instruction
	log      string
	stats    verifier.Stats
	maxCtx   uint32 // verifier.Result.MaxCtxOffset
	maxTP    uint32 // verifier.Result.MaxTPAccess
	target   *verifier.AttachTarget
	// kernelTypes is the target BTF the program was verified against
	// (nil: none was needed).
	kernelTypes *btf.Spec
}

// maxLogSize caps the verifier log buffer the retries grow to.
const maxLogSize = 1 << 30

// verify runs the verifier unless the options or the program type say not
// to (the result then has no aux).
func verify(insns []isa.Instruction, pt *progtype.Type, ms []*Map, hs *helper.Set, opts ProgramOptions) (*verified, error) {
	var kt *btf.Spec
	var target *verifier.AttachTarget
	if pt.BTFArgs {
		// The kernel refuses a tracing program whose target it cannot
		// find, before verifying it (or not).
		kt = opts.KernelTypes
		if kt == nil {
			kt = defaultKernelTypes(opts)
		}
		var err error
		if target, err = verifier.ResolveAttach(kt, pt.Attach, opts.AttachTo); err != nil {
			return nil, err
		}
		// The helper set of the target (an LSM program's hook).
		pt = pt.ForTarget(opts.AttachTo, opts.flags&verifier.FlagSleepable != 0)
	}
	if opts.NoVerify || pt.ContextSize == 0 {
		return &verified{target: target}, nil
	}
	// A helper bpfvm lacks is a load error of its own, before the verifier
	// would call it an invalid function; one the program type may not call
	// is the verifier's to reject, as the kernel does.
	caps := progtype.CapPerfmon
	if opts.Unprivileged {
		caps = progtype.CapNone
	}
	for pc, ins := range insns {
		// Only kernel helpers: an id the kernel lacks (a host's, or the
		// call CO-RE poisons an instruction with) is the verifier's to
		// reject where it reaches it, as the kernel does.
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && isa.HelperName(ins.Imm) != "" && hs.Func(ins.Imm) == nil && pt.CanCall(ins.Imm, caps) && pt.HelperRefused(ins.Imm) == "" {
			return nil, fmt.Errorf("insn %d: %w %s", pc, vm.ErrHelper, isa.HelperLabel(ins.Imm))
		}
	}
	infos := make([]verifier.MapInfo, len(ms))
	for i, m := range ms {
		infos[i] = verifier.MapInfo{Name: m.name, Spec: m.m.Spec(), Index: i, Frozen: m.m.Frozen(), ReadOnlyValue: readOnlyValue(m.m)}
	}
	vopts := verifier.Options{
		Type:         pt,
		Maps:         infos,
		Helpers:      hs.Proto,
		Unprivileged: opts.Unprivileged,
		Flags:        opts.flags,
		LogLevel:     int(opts.LogLevel),
		LogSize:      opts.LogSize,
		Funcs:        opts.Funcs,
		Lines:        opts.Lines,
		KernelTypes:  opts.KernelTypes,
	}
	kernelObjects := slices.ContainsFunc(pt.Fields, func(f progtype.Field) bool { return f.Kind == progtype.KernelObject })
	if vopts.KernelTypes == nil && (needsKernelTypes(insns, hs) || slices.ContainsFunc(ms, hasKptrs) || kernelObjects) {
		vopts.KernelTypes = defaultKernelTypes(opts)
	}
	if pt.BTFArgs {
		vopts.KernelTypes, vopts.Attach = kt, target
	}
	res, err := verifier.Verify(insns, vopts)
	// A log that did not fit: verify again with the buffer it needs (the
	// kernel's log_true_size), as cilium/ebpf does with the kernel's
	// ENOSPC, up to maxLogSize.
	for errors.Is(err, verifier.ErrLogTruncated) && vopts.LogSize < maxLogSize {
		vopts.LogSize = min(max(vopts.LogSize*2, res.LogTrueSize), maxLogSize)
		res, err = verifier.Verify(insns, vopts)
	}
	if errors.Is(err, verifier.ErrRejected) && vopts.LogLevel == 0 && !opts.LogDisabled {
		// A rejection without a log: verify again for the log, as
		// cilium/ebpf loads again with LogLevelBranch.
		vopts.LogLevel, vopts.LogSize = 1, 0
		if res2, err2 := verifier.Verify(insns, vopts); errors.Is(err2, verifier.ErrRejected) {
			res, err = res2, err2
		}
	}
	if err != nil {
		if errors.Is(err, verifier.ErrRejected) {
			return nil, newVerifierError(explainPoison(err, opts.poisons), res.Log, errors.Is(err, verifier.ErrLogTruncated))
		}
		return nil, err
	}
	shadow := runner.Shadow(pt)
	ctx := rewrite.ConvertContext(insns, res.Aux, rewrite.Shadow{
		Data: shadow + runner.ShadowData, End: shadow + runner.ShadowEnd, Meta: shadow + runner.ShadowMeta,
		FlowKeys: shadow + runner.ShadowFlowKeys, Socket: shadow + runner.ShadowSocket, TPBuffer: shadow + runner.ShadowTPBuffer,
	})
	rewrite.ProbeLoads(ctx, res.Aux)
	if a := programArena(ms); a != nil {
		rewrite.LowerArena(ctx, res.Aux, a.Spec().Flags&maps.FlagNoUserConv != 0)
	}
	return &verified{aux: res.Aux, ctxInsns: ctx, log: res.Log, stats: res.Stats, maxCtx: res.MaxCtxOffset, maxTP: res.MaxTPAccess, target: target, kernelTypes: vopts.KernelTypes}, nil
}

// defaultKernelTypes is the kernel BTF verification uses when the options
// name none: the load's CO-RE target (the host's vmlinux, else the shipped
// types), the same types bpf_core_type_id_kernel numbered; nil if there is
// none.
func defaultKernelTypes(opts ProgramOptions) *btf.Spec {
	targets := opts.targets
	if targets == nil {
		targets = newCORETargets(ProgramOptions{}, nil)
	}
	if specs, err := targets.get(); err == nil && len(specs) > 0 {
		return specs[0]
	}
	return nil
}

// needsKernelTypes reports whether verifying insns needs the kernel's BTF:
// it calls kfuncs that give pointers to kernel objects.
func needsKernelTypes(insns []isa.Instruction, hs *helper.Set) bool {
	return slices.ContainsFunc(insns, func(ins isa.Instruction) bool {
		if ins.Op != isa.OpCall {
			return false
		}
		if ins.Src == isa.Register(isa.CallHelper) {
			// Helpers typed by BTF (bpf_get_current_task_btf,
			// bpf_seq_printf's seq_file).
			p := hs.Proto(ins.Imm)
			return p != nil && p.UsesBTF()
		}
		return ins.Src == isa.Register(isa.CallKfunc) && (ins.Imm == isa.KfuncCastToKernCtx || ins.Imm == isa.KfuncRdonlyCast)
	})
}

// hasKptrs reports whether m's values, or its inner maps', hold kernel
// pointers, whose loads the verifier types by the kernel's BTF.
func hasKptrs(m *Map) bool {
	spec := m.m.Spec()
	for s := &spec; s != nil; s = s.InnerMap {
		fs, _ := s.Fields()
		if slices.ContainsFunc(fs, func(f maps.Field) bool { return f.Kind&maps.AnyKptr != 0 }) {
			return true
		}
	}
	return false
}

// explainPoison adds to a rejection at an instruction CO-RE poisoned the
// relocation that poisoned it, which the kernel's message ("invalid func
// unknown#195896080") leaves the user to work out.
func explainPoison(err error, poisons []loader.Poison) error {
	var ve *verifier.Error
	if len(poisons) == 0 || !errors.As(err, &ve) {
		return err
	}
	for _, p := range poisons {
		if p.Insn == ve.Insn {
			return fmt.Errorf("%w (instruction %d poisoned by CO-RE: the target BTF cannot satisfy %s)", err, p.Insn, p.Relocation)
		}
	}
	return err
}

// readOnlyValue returns the value of a single-value array whose contents
// are fixed: read-only to programs (BPF_F_RDONLY_PROG) and frozen, the
// kernel's bpf_map_is_rdonly. Constant-string arguments point into it and
// the verifier takes loads from it as constants; nil for any other map.
func readOnlyValue(m maps.Map) []byte {
	s := m.Spec()
	if !s.Type.DirectValue() || s.MaxEntries != 1 || !fixedContents(m) {
		return nil
	}
	v := make([]byte, s.ValueSize)
	if m.LookupBytes(make([]byte, 4), v) != nil {
		return nil
	}
	return v
}

// fixedContents reports whether neither programs nor Go code can change a
// map's contents any more (bpf_map_is_rdonly), as the verifier judges it.
func fixedContents(m maps.Map) bool {
	return (&verifier.MapInfo{Spec: m.Spec(), Frozen: m.Frozen()}).Fixed()
}

// rewritten is a program rewritten for an engine, with the verifier's
// facts aligned with it (nil for an unverified program), and its BTF line
// and func info moved with its instructions (nil when not rewritten).
type rewritten struct {
	insns []isa.Instruction
	aux   []verifier.InsnAux
	lines []verifier.LineInfo
	funcs []verifier.FuncInfo
}

// rewriteFor rewrites a program for engine e. A verified program first
// loses what the verifier never reached and has its context stores
// guarded, then has helper calls inlined where that pays on e (DESIGN.md,
// "Map lookups are inlined per engine"): everything on the JIT; on the
// interpreter, where each inlined instruction is a dispatch, only the short
// sequences. Every program then has its may_goto expanded.
func rewriteFor(e Engine, insns []isa.Instruction, v *verified, hs *helper.Set, opts ProgramOptions) (rewritten, error) {
	out := rewritten{insns: insns}
	ctxInsns, aux := v.ctxInsns, v.aux
	if cb, ok := verifier.ExceptionCallback(opts.Funcs); ok {
		// The exception callback, which no call reaches, gets a reference
		// the rewrites keep pointing at it (throw.go).
		out.insns = withCatchMarker(insns, cb)
		if aux != nil {
			ctxInsns = withCatchMarker(ctxInsns, cb)
			aux = append(slices.Clone(aux), verifier.InsnAux{Seen: true}, verifier.InsnAux{Seen: true}, verifier.InsnAux{Seen: true})
		}
	}
	if v.aux != nil {
		rp, err := rewrite.New(ctxInsns, aux)
		if err != nil {
			return out, err
		}
		// First, while every instruction's aux is its own: what the
		// verifier never reached must not run (DESIGN.md, "Dead code
		// stops the run").
		rewrite.SanitizeDeadCode(rp, !opts.Unprivileged)
		if err := rewrite.GuardContextStores(rp); err != nil {
			return out, err
		}
		if err := rewrite.ConvertNoneLoads(rp); err != nil {
			return out, err
		}
		if err := rewrite.ZextArena(rp); err != nil {
			return out, err
		}
		if !opts.NoInline {
			// Checked runs grant the memory inlined lookups read for the
			// program's own maps only (DESIGN.md, "Defense in depth").
			io := rewrite.InlineOptions{Interpreter: e == EngineInterpreter, KnownMaps: opts.checked(), Helpers: hs.Lookup}
			if _, err := rewrite.InlineHelpers(rp, io); err != nil {
				return out, err
			}
			rewrite.InlineIterNext(rp)
			rewrite.InlineCasts(rp)
			if _, err := rewrite.InlineLoops(rp, hs.Lookup); err != nil {
				return out, err
			}
		}
		out.insns, out.aux = rp.Insns, rp.Aux
		// Line and func info follow their instructions, as the kernel's
		// bpf_adj_linfo after its patches.
		for _, l := range opts.Lines {
			if pc, ok := rp.At(l.Insn); ok {
				l.Insn = pc
				out.lines = append(out.lines, l)
			}
		}
		for _, f := range opts.Funcs {
			if pc, ok := rp.At(f.Start); ok {
				f.Start = pc
				out.funcs = append(out.funcs, f)
			}
		}
	}
	if v.aux == nil {
		out.insns = poisonedToDead(out.insns)
	}
	var err error
	out.insns, err = expandMayGoto(out.insns, opts)
	return out, err
}

// isCOREPoison reports whether insns[pc] is an instruction CO-RE poisoned
// (loader.RelocateCORE): `call 0xbad2310`, or the LD_IMM64
// `r10 = 0xbad2310 ll`.
func isCOREPoison(insns []isa.Instruction, pc int) bool {
	ins := insns[pc]
	if ins.Imm != btf.COREBadRelocationSentinel {
		return false
	}
	if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) {
		return true
	}
	return ins.IsLdImm64() && ins.Src == 0 && ins.Dst == isa.R10 && pc+1 < len(insns) && insns[pc+1].Imm == 0
}

// poisonedToDead makes the instructions CO-RE poisoned in an unverified
// program stop the run where reached (isa.OpDead), which is what the
// verifier's rejection of them is for verified ones: unreached, they are
// harmless, as libbpf's poisoning intends.
func poisonedToDead(insns []isa.Instruction) []isa.Instruction {
	var out []isa.Instruction
	for pc := 0; pc < len(insns); pc++ {
		if !isCOREPoison(insns, pc) {
			continue
		}
		if out == nil {
			out = slices.Clone(insns)
		}
		out[pc] = isa.Instruction{Op: isa.OpDead}
		if insns[pc].IsLdImm64() {
			pc++
			out[pc] = isa.Instruction{Op: isa.OpDead}
		}
	}
	if out == nil {
		return insns
	}
	return out
}

// expandMayGoto turns may_goto into the engines' timed form with its
// per-frame prologue (rewrite.ExpandMayGoto), for verified and unverified
// programs alike.
func expandMayGoto(insns []isa.Instruction, opts ProgramOptions) ([]isa.Instruction, error) {
	if !slices.ContainsFunc(insns, func(ins isa.Instruction) bool { return ins.Op == isa.OpMayGoto }) {
		return insns, nil
	}
	budget := opts.MayGotoBudget
	if budget == 0 {
		budget = rewrite.DefaultMayGotoBudget
	}
	rp, err := rewrite.New(insns, make([]verifier.InsnAux, len(insns)))
	if err != nil {
		return nil, err
	}
	if _, err := rewrite.ExpandMayGoto(rp, budget); err != nil {
		return nil, err
	}
	return rp.Insns, nil
}

// resolve replaces map references (LD_IMM64 with a map pseudo source and
// the map's index in ms as immediate) with map handles and value
// addresses, as the kernel does after verification, and kfunc calls with
// calls of their internal helper ids.
func resolve(insns []isa.Instruction, ms []*Map) ([]isa.Instruction, error) {
	out := slices.Clone(insns)
	helper.ToHelperCalls(out)
	for i := 0; i < len(out); i++ {
		ins := out[i]
		if !ins.IsLdImm64() {
			continue
		}
		src := uint8(ins.Src)
		if src == isa.PseudoMapField {
			// A header field an inlined lookup reads (rewrite's seq.field).
			idx, off, size := int(ins.Imm), uint64(uint32(out[i+1].Imm)), uint64(ins.Off)
			if idx < 0 || idx >= len(ms) || off+size > maps.HeaderFieldBytes || size != 4 && size != 8 {
				return nil, fmt.Errorf("insn %d: map field %d+%d of size %d out of range", i, idx, off, size)
			}
			v := vm.LoadSized(ms[idx].m.Handle()+maps.HeaderFields+off, size)
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
		if idx < 0 || idx >= len(ms) {
			return nil, fmt.Errorf("insn %d: map index %d out of range", i, idx)
		}
		m := ms[idx].m
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

// built is a program's engine, with the rewritten program it runs.
type built struct {
	engine runner.Engine
	kind   Engine // EngineInterpreter or EngineJIT
	info   JITInfo
	x      rewritten
}

// build rewrites, resolves and compiles the program for its engine: the
// JIT when asked for (or by default), falling back to the interpreter when
// the JIT cannot compile it (out of executable memory in both tiers, or
// anything else), which never fails a load.
func build(insns []isa.Instruction, v *verified, ms []*Map, hs *helper.Set, run *runner.Program, opts ProgramOptions) (built, error) {
	if opts.Engine == EngineJIT || opts.Engine == EngineDefault {
		x, err := rewriteFor(EngineJIT, insns, v, hs, opts)
		if err != nil {
			return built{}, err
		}
		code, err := resolve(x.insns, ms)
		if err != nil {
			return built{}, err
		}
		// Verified programs run unchecked unless Checks asks otherwise,
		// others checked.
		mode := amd64.Checked
		if !run.Checked {
			mode = amd64.Unchecked
		}
		jo := opts.JIT
		jp, err := amd64.Compile(code, hs.Func, amd64.Options{
			Modes: mode, Natives: hs.Native, Memory: jo.Memory, Unprivileged: opts.Unprivileged,
			Far: jo.Far, Retpoline: jo.Retpoline, Blind: jo.Blind || opts.Unprivileged,
			Budgeted: opts.Budget != 0, NonStack: nonStack(x.aux, run.Checked),
			Arena: arenaBase(ms), ArenaUser: arenaUser(ms),
		})
		if err == nil {
			run.Catch = catchEntry(x.insns, opts.Funcs)
			return built{engine: jp, kind: EngineJIT, info: jp.Info(mode == amd64.Checked), x: x}, nil
		}
	}
	x, err := rewriteFor(EngineInterpreter, insns, v, hs, opts)
	if err != nil {
		return built{}, err
	}
	code, err := resolve(x.insns, ms)
	if err != nil {
		return built{}, err
	}
	ip, err := interp.New(code, hs.Func)
	if err != nil {
		return built{}, err
	}
	run.Catch = catchEntry(x.insns, opts.Funcs)
	return built{engine: ip, kind: EngineInterpreter, x: x}, nil
}

// nonStack marks the loads and stores of a rewritten, verified program
// that the verifier saw go through a pointer other than the stack: checked
// JIT code tests them against the hot region first (amd64.Options.NonStack).
func nonStack(aux []verifier.InsnAux, checked bool) []bool {
	if aux == nil || !checked {
		return nil
	}
	ns := make([]bool, len(aux))
	for pc, a := range aux {
		ns[pc] = a.PtrType.IsPointer() && a.PtrType != verifier.PtrToStack
	}
	return ns
}
