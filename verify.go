package bpfvm

import (
	"errors"
	"fmt"
	"strings"

	"bpfvm/isa"
	"bpfvm/maps"
	"bpfvm/progtype"
	"bpfvm/rewrite"
	"bpfvm/verifier"
	"bpfvm/vm"
)

// VerifierError is a program the verifier rejected, with its log, like
// cilium/ebpf's.
type VerifierError struct {
	// Err wraps verifier.ErrRejected and names the instruction.
	Err error
	Log string
}

func (e *VerifierError) Error() string {
	msg := "load program: " + e.Err.Error()
	if hint := "(set ProgramOptions.NoVerify to run it unverified in checked mode)"; !strings.Contains(msg, "NoVerify") {
		msg += " " + hint
	}
	return msg
}

func (e *VerifierError) Unwrap() error { return e.Err }

// maxLogSize caps the verifier log buffer the retries grow to.
const maxLogSize = 1 << 30

// Stats returns the cost of verifying the program.
func (p *Program) Stats() verifier.Stats { return p.stats }

// Verified reports whether the program passed the verifier.
func (p *Program) Verified() bool { return p.verified }

// Checked reports whether the program's memory accesses are checked at run
// time: always for unverified programs, for verified ones as
// ProgramOptions.Checks says.
func (p *Program) Checked() bool { return p.checked }

// proto returns the prototype the verifier uses for a helper id.
func (p *Program) proto(id int32) *verifier.Proto {
	if pr, ok := p.opts.HelperProtos[id]; ok {
		return pr
	}
	if _, ok := p.opts.Helpers[id]; ok {
		return nil // a host helper without a prototype cannot be verified
	}
	if builtinHelpers[id] == nil {
		return nil
	}
	return verifier.BuiltinProto(id)
}

// readOnlyValue returns the value of a single-value array whose contents
// are fixed: read-only to programs (BPF_F_RDONLY_PROG) and frozen, the
// kernel's bpf_map_is_rdonly. Constant-string arguments point into it and
// the verifier takes loads from it as constants; nil for any other map.
func readOnlyValue(m maps.Map) []byte {
	s := m.Spec()
	if s.Type != maps.Array || s.MaxEntries != 1 || !fixedContents(m) {
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

// verify runs the verifier unless the options or the program type say not
// to, and rewrites context accesses for unchecked execution.
func (p *Program) verify() error {
	if p.opts.NoVerify || p.pt.ContextSize == 0 {
		return nil
	}
	// A helper bpfvm lacks is a load error of its own, before the verifier
	// would call it an invalid function.
	for pc, ins := range p.insns {
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && p.helper(ins.Imm) == nil {
			return fmt.Errorf("insn %d: %w %s", pc, vm.ErrHelper, isa.HelperLabel(ins.Imm))
		}
	}
	infos := make([]verifier.MapInfo, len(p.maps))
	for i, m := range p.maps {
		infos[i] = verifier.MapInfo{Name: m.name, Spec: m.m.Spec(), Index: i, Frozen: m.m.Frozen(), ReadOnlyValue: readOnlyValue(m.m)}
	}
	vopts := verifier.Options{
		Type:         p.pt,
		Maps:         infos,
		Helpers:      p.proto,
		Unprivileged: p.opts.Unprivileged,
		Flags:        p.opts.flags,
		LogLevel:     p.opts.LogLevel,
		LogSize:      p.opts.LogSize,
		Funcs:        p.opts.Funcs,
		Lines:        p.opts.Lines,
	}
	res, err := verifier.Verify(p.insns, vopts)
	// A log that did not fit: verify again with the buffer it needs (the
	// kernel's log_true_size), as cilium/ebpf does with the kernel's
	// ENOSPC, up to maxLogSize.
	for errors.Is(err, verifier.ErrLogTruncated) && vopts.LogSize < maxLogSize {
		vopts.LogSize = min(max(vopts.LogSize*2, res.LogTrueSize), maxLogSize)
		res, err = verifier.Verify(p.insns, vopts)
	}
	if res != nil {
		p.VerifierLog, p.stats = res.Log, res.Stats
	}
	if err != nil {
		if errors.Is(err, verifier.ErrRejected) {
			return &VerifierError{Err: err, Log: res.Log}
		}
		return err
	}
	p.verified = true
	p.ctxInsns, p.aux = rewriteContext(p.insns, res.Aux, p.shadowOffset()), res.Aux
	if p.opts.Engine == EngineInterpreter {
		return p.inline(EngineInterpreter)
	}
	return p.inline(EngineJIT)
}

// inline sets the rewritten program of a verified program for an engine:
// helper calls inlined where that pays on it (DESIGN.md, "Map lookups are
// inlined per engine"): everything on the JIT; on the interpreter, where
// each inlined instruction is a dispatch, only the short sequences.
func (p *Program) inline(e Engine) error {
	if !p.verified {
		return nil
	}
	rp, err := rewrite.New(p.ctxInsns, p.aux)
	if err != nil {
		return err
	}
	// First, while every instruction's aux is its own: what the verifier
	// never reached must not run (DESIGN.md, "Dead code stops the run").
	rewrite.SanitizeDeadCode(rp, !p.opts.Unprivileged)
	if err := guardContextStores(rp); err != nil {
		return err
	}
	if !p.opts.NoInline {
		// Checked runs grant the memory inlined lookups read for the
		// program's own maps only (DESIGN.md, "Defense in depth").
		io := rewrite.InlineOptions{Interpreter: e == EngineInterpreter, KnownMaps: p.opts.checked()}
		if _, err := rewrite.InlineHelpers(rp, io); err != nil {
			return err
		}
		rewrite.InlineIterNext(rp)
		if _, err := rewrite.InlineLoops(rp); err != nil {
			return err
		}
	}
	p.xlated, p.xlatedAux = rp.Insns, rp.Aux
	// Line and func info follow their instructions, as the kernel's
	// bpf_adj_linfo after its patches.
	p.xlatedLines, p.xlatedFuncs = nil, nil
	for _, l := range p.opts.Lines {
		if pc, ok := rp.At(l.Insn); ok {
			l.Insn = pc
			p.xlatedLines = append(p.xlatedLines, l)
		}
	}
	for _, f := range p.opts.Funcs {
		if pc, ok := rp.At(f.Start); ok {
			f.Start = pc
			p.xlatedFuncs = append(p.xlatedFuncs, f)
		}
	}
	return nil
}

// nonStack marks the loads and stores of the rewritten program that the
// verifier saw go through a pointer other than the stack: checked JIT code
// tests them against the hot region first (amd64.Options.NonStack).
func (p *Program) nonStack() []bool {
	if !p.verified || !p.checked {
		return nil
	}
	ns := make([]bool, len(p.xlatedAux))
	for pc, a := range p.xlatedAux {
		ns[pc] = a.PtrType.IsPointer() && a.PtrType != verifier.PtrToStack
	}
	return ns
}

// shadowOffset is where, in the context area, the runner keeps the 64-bit
// packet pointers that verified programs load in place of the context's
// 32-bit data, data_end and data_meta fields.
func (p *Program) shadowOffset() uint64 {
	return (uint64(p.pt.ContextSize) + 7) &^ 7
}

// contextArea is the size of the context area at the start of a run's
// buffer: the context and the shadow slots, at least 256 bytes.
func (p *Program) contextArea() int {
	return max(256, int(p.shadowOffset()+shadowSize+63)&^63)
}

// Shadow slots, relative to the shadow offset.
const (
	shadowData = 0
	shadowEnd  = 8
	shadowMeta = 16
	shadowSize = 24
)

// rewriteContext turns loads of packet pointer fields, which the verifier
// proved go to the context, into 64-bit loads of the shadow slots, and
// accesses of scalar fields stored narrower than shown to their stored
// form: the kernel's convert_ctx_access for the fields whose stored form
// differs from what the program sees. Each rewrite is one instruction for
// one, so jump offsets and aux data stay aligned.
func rewriteContext(insns []isa.Instruction, aux []verifier.InsnAux, shadow uint64) []isa.Instruction {
	out := append([]isa.Instruction(nil), insns...)
	for pc := range out {
		f := aux[pc].Ctx
		if f == nil {
			continue
		}
		ins := &out[pc]
		if f.Kind == progtype.Scalar {
			// The verifier proved the context pointer unmodified, so the
			// instruction's offset is the access's.
			op := progtype.Load
			if ins.Class() == isa.ClassST || ins.Class() == isa.ClassSTX {
				op = progtype.Store
			}
			size := uint32(isa.SizeBytes(ins.Op))
			off, n := f.Convert(uint32(ins.Off), size, op)
			ins.Off, ins.Op = int16(off), ins.Op&^0x18|sizeCode(n)
			continue
		}
		var slot uint64
		switch f.Kind {
		case progtype.PacketData:
			slot = shadowData
		case progtype.PacketEnd:
			slot = shadowEnd
		case progtype.PacketMeta:
			slot = shadowMeta
		}
		*ins = isa.Instruction{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeDW, Dst: ins.Dst, Src: ins.Src, Off: int16(shadow + slot)}
	}
	return out
}

// guardContextStores makes stores to context fields with a StoreLimit
// conditional, as the kernel's context conversion does: a register store
// is skipped when the value reaches the limit, an immediate store that
// reaches it is no store at all.
func guardContextStores(rp *rewrite.Program) error {
	var rs []rewrite.Replacement
	for pc, ins := range rp.Insns {
		f := rp.Aux[pc].Ctx
		if f == nil || f.StoreLimit == 0 {
			continue
		}
		switch ins.Class() {
		case isa.ClassSTX:
			skip := isa.Instruction{Op: isa.ClassJMP | isa.JumpGE | isa.SrcK, Dst: ins.Src, Off: 1, Imm: int32(f.StoreLimit)}
			rs = append(rs, rewrite.Replacement{PC: pc, Seq: []isa.Instruction{skip, ins}})
		case isa.ClassST:
			if int64(ins.Imm) >= int64(f.StoreLimit) {
				rs = append(rs, rewrite.Replacement{PC: pc, Seq: []isa.Instruction{{Op: isa.OpJA}}})
			}
		}
	}
	if len(rs) == 0 {
		return nil
	}
	if err := rp.PatchAll(rs); err != nil {
		return fmt.Errorf("context stores: %w", err)
	}
	return nil
}

// sizeCode is the size field of a load or store of n bytes.
func sizeCode(n uint32) uint8 {
	switch n {
	case 1:
		return isa.SizeB
	case 2:
		return isa.SizeH
	case 4:
		return isa.SizeW
	}
	return isa.SizeDW
}

func (e *VerifierError) String() string { return fmt.Sprintf("%v\n%s", e.Err, e.Log) }
