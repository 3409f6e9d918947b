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

// Verified reports whether the program passed the verifier and runs with
// unchecked memory accesses.
func (p *Program) Verified() bool { return p.verified }

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

// readOnlyValue returns the value of a single-value array read-only to
// programs, which constant-string arguments point into, or nil. bpfvm has
// no frozen maps: Go code may still write the value after the program is
// verified, and the helpers reading such strings bound them by the value
// (constString).
func readOnlyValue(m maps.Map) []byte {
	s := m.Spec()
	if s.Type != maps.Array || s.MaxEntries != 1 || s.Flags&maps.FlagRdonlyProg == 0 {
		return nil
	}
	v := make([]byte, s.ValueSize)
	if m.LookupBytes(make([]byte, 4), v) != nil {
		return nil
	}
	return v
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
		infos[i] = verifier.MapInfo{Name: m.name, Spec: m.m.Spec(), Index: i, ReadOnlyValue: readOnlyValue(m.m)}
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
	}
	res, err := verifier.Verify(p.insns, vopts)
	// A log that did not fit: double the buffer and verify again, as
	// libbpf and cilium/ebpf do with the kernel's ENOSPC.
	for errors.Is(err, verifier.ErrLogTruncated) && vopts.LogSize < maxLogSize {
		vopts.LogSize *= 2
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
	if !p.opts.NoInline {
		if _, err := rewrite.InlineHelpers(rp, rewrite.InlineOptions{Interpreter: e == EngineInterpreter}); err != nil {
			return err
		}
		rewrite.InlineIterNext(rp)
		if _, err := rewrite.InlineLoops(rp); err != nil {
			return err
		}
	}
	p.xlated = rp.Insns
	return nil
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
// proved go to the context, into 64-bit loads of the shadow slots: the
// kernel's convert_ctx_access for the fields whose stored form differs from
// what the program sees. Each rewrite is one instruction for one, so jump
// offsets and aux data stay aligned.
func rewriteContext(insns []isa.Instruction, aux []verifier.InsnAux, shadow uint64) []isa.Instruction {
	out := append([]isa.Instruction(nil), insns...)
	for pc := range out {
		f := aux[pc].Ctx
		if f == nil || f.Kind == progtype.Scalar {
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
		ins := out[pc]
		out[pc] = isa.Instruction{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeDW, Dst: ins.Dst, Src: ins.Src, Off: int16(shadow + slot)}
	}
	return out
}

func (e *VerifierError) String() string { return fmt.Sprintf("%v\n%s", e.Err, e.Log) }
