package verifier

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
)

// FuncInfo describes one function of a program from its BTF func_info (the
// kernel's bpf_func_info and the BTF type it names).
type FuncInfo struct {
	// Start is the function's first instruction.
	Start int
	// Name is the function's name.
	Name string
	// Global is set for BTF_FUNC_GLOBAL linkage: the function is verified
	// once, on its own, against Proto, and calls to it are checked
	// against Proto instead of being followed.
	Global bool
	// Proto is the function's prototype; nil when the BTF has none.
	Proto *btf.FuncProto
	// ParamTags are the decl tags of each parameter ("arg:ctx"), as
	// btf.Func holds them; nil when there are none.
	ParamTags [][]string
	// Tags are the decl tags of the function itself
	// ("exception_callback:<name>", throw.go).
	Tags []string
}

// NewFuncInfo returns the FuncInfo of the function fn that starts at
// instruction start (cilium/ebpf keeps fn on that instruction:
// btf.FuncMetadata).
func NewFuncInfo(start int, fn *btf.Func) FuncInfo {
	proto, _ := fn.Type.(*btf.FuncProto)
	return FuncInfo{Start: start, Name: fn.Name, Global: fn.Linkage == btf.GlobalFunc, Proto: proto, ParamTags: fn.ParamTags, Tags: fn.Tags}
}

// globalArgKind is how a global function's argument is typed from BTF.
type globalArgKind uint8

const (
	globalScalar globalArgKind = iota // int or enum: any scalar
	globalCtx                         // pointer to the program's context
	globalMem                         // pointer to size bytes, maybe NULL
	globalDynptr                      // pointer to an initialised dynptr
)

// globalArg is one argument of a global function (the kernel's
// bpf_subprog_arg_info).
type globalArg struct {
	kind     globalArgKind
	size     uint32
	nullable bool
}

// funcMeta is what the verifier knows of one function from its BTF.
type funcMeta struct {
	name   string
	global bool
	// args, once prepared, is the prototype of a global function; protoErr
	// says why it cannot be used (the kernel's message).
	args     []globalArg
	prepared bool
	protoErr string
	// called is set once a call to the global function was verified;
	// verified once the function itself was.
	called, verified bool
	// changesPkt: the function, or one it calls, may move the packet.
	changesPkt bool
}

// checkFuncInfo applies the rules that hold between the program and its
// BTF func_info before anything is verified (the kernel's
// check_btf_func_early, check_btf_func and check_abnormal_return): one
// record per function; LD_ABS and tail calls, which may return from a
// subprogram at once, only in subprograms that return a scalar, and none
// in subprograms without BTF at all.
func (v *verifier) checkFuncInfo() error {
	fs := v.opts.Funcs
	v.funcs = make([]funcMeta, len(v.subs))
	for i := 1; i < len(v.subs); i++ {
		ldAbs, tail := v.abnormalReturns(v.subs[i])
		if fs == nil {
			if ldAbs {
				return v.errorf(0, "LD_ABS is not allowed in subprogs without BTF")
			}
			if tail {
				return v.errorf(0, "tail_call is not allowed in subprogs without BTF")
			}
			continue
		}
		if len(fs) != len(v.subs) {
			break
		}
		if p := fs[i].Proto; p == nil || !isScalarType(p.Return) {
			if ldAbs {
				return v.errorf(0, "LD_ABS is only allowed in functions that return 'int'.")
			}
			if tail {
				return v.errorf(0, "tail_call is only allowed in functions that return 'int'.")
			}
		}
	}
	if fs == nil {
		return nil
	}
	if len(fs) != len(v.subs) {
		return v.errorf(0, "number of funcs in func_info doesn't match number of subprogs")
	}
	for i, f := range fs {
		if f.Start != v.subs[i].Start {
			return v.errorf(0, "func_info BTF section doesn't match subprog layout in BPF program")
		}
		v.funcs[i] = funcMeta{name: f.Name, global: f.Global && i > 0}
	}
	v.markPacketChangers()
	return nil
}

// abnormalReturns reports whether the function s holds LD_ABS/LD_IND or a
// tail call, which may return from it before its exit.
func (v *verifier) abnormalReturns(s subprog) (ldAbs, tail bool) {
	for pc := s.Start; pc < s.End; pc++ {
		ins := v.insns[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Class() == isa.ClassLD {
			ldAbs = true
		}
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallHelper) && ins.Imm == tailCallID {
			tail = true
		}
	}
	return ldAbs, tail
}

// tailCallID is bpf_tail_call's helper id.
const tailCallID = 12

// markPacketChangers finds the functions that may move the packet: those
// calling a helper that does, or tail-calling (the target may), or
// calling such a function. A call to a global one invalidates the
// caller's packet pointers (the kernel's changes_pkt_data).
func (v *verifier) markPacketChangers() {
	for i, s := range v.subs {
		for pc := s.Start; pc < s.End; pc++ {
			ins := v.insns[pc]
			if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallHelper) {
				continue
			}
			if p := v.proto(ins.Imm); p != nil && (p.ChangesPacket || p.TailCall) || ins.Imm == tailCallID {
				v.funcs[i].changesPkt = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for i, s := range v.subs {
			for pc := s.Start; pc < s.End && !v.funcs[i].changesPkt; pc++ {
				if ins := v.insns[pc]; ins.IsLocalCall() && v.funcs[subprogAt(v.subs, pc+1+int(ins.Imm))].changesPkt {
					v.funcs[i].changesPkt, changed = true, true
				}
			}
		}
	}
}

// isGlobal reports whether function sub is verified on its own.
func (v *verifier) isGlobal(sub int) bool {
	return sub < len(v.funcs) && v.funcs[sub].global
}

// isScalarType reports whether t, past typedefs and qualifiers, is an
// integer or an enum: what a global function may return or take by value.
func isScalarType(t btf.Type) bool {
	switch btf.UnderlyingType(t).(type) {
	case *btf.Int, *btf.Enum:
		return true
	}
	return false
}

// prepareArgs types a global function's arguments from its prototype (the
// kernel's btf_prepare_func_args); the kernel's message says why one
// cannot be used.
func (v *verifier) prepareArgs(sub int) {
	m := &v.funcs[sub]
	if m.prepared {
		return
	}
	m.prepared = true
	args, msg := v.globalArgs(sub)
	m.args, m.protoErr = args, msg
}

func (v *verifier) globalArgs(sub int) ([]globalArg, string) {
	fi := v.opts.Funcs[sub]
	name := fi.Name
	if fi.Proto == nil {
		return nil, fmt.Sprintf("Invalid type of function %s()", name)
	}
	params := fi.Proto.Params
	if len(params) > 5 {
		return nil, fmt.Sprintf("Global function %s() with %d > %d args. Buggy compiler.", name, len(params), 5)
	}
	if !isScalarType(fi.Proto.Return) {
		return nil, fmt.Sprintf("Global function %s() doesn't return scalar. Only those are supported.", name)
	}
	args := make([]globalArg, len(params))
	for i, p := range params {
		var ctxTag, nonnull, nullable bool
		tags := 0
		if i < len(fi.ParamTags) {
			for _, tag := range fi.ParamTags[i] {
				t, ok := strings.CutPrefix(tag, "arg:")
				if !ok {
					continue
				}
				tags++
				switch t {
				case "ctx":
					ctxTag = true
				case "nonnull":
					nonnull = true
				case "nullable":
					// Only for BTF-typed (trusted) pointers.
					nullable = true
				case "trusted", "untrusted", "arena":
					// Arguments typed as kernel objects: what BTF-typed
					// pointers bring (not modelled yet).
					return nil, fmt.Sprintf("arg#%d tag arg:%s is not supported by bpfvm yet", i, t)
				default:
					return nil, fmt.Sprintf("arg#%d has unsupported set of tags", i)
				}
			}
		}
		t := btf.UnderlyingType(p.Type)
		ptr, isPtr := t.(*btf.Pointer)
		if !isPtr {
			if tags > 0 {
				return nil, fmt.Sprintf("arg#%d has pointer tag, but is not a pointer type", i)
			}
			if isScalarType(t) {
				args[i] = globalArg{kind: globalScalar}
				continue
			}
			return nil, fmt.Sprintf("Arg#%d type %s in %s() is not supported yet.", i, kindName(t), name)
		}
		if ctxTag || v.isContextType(ptr.Target) {
			if nonnull || nullable {
				return nil, fmt.Sprintf("arg#%d has invalid combination of tags", i)
			}
			if ctxTag && !v.ctxTagTarget(ptr.Target) {
				if len(v.pt.ContextNames) > 0 {
					return nil, fmt.Sprintf("arg#%d should be `struct %s *`", i, v.pt.ContextNames[0])
				}
				return nil, fmt.Sprintf("arg#%d expected pointer to ctx, but got %s", i, typeString(ptr.Target))
			}
			args[i] = globalArg{kind: globalCtx}
			continue
		}
		if nullable {
			return nil, fmt.Sprintf("arg#%d has invalid combination of tags", i)
		}
		target := btf.UnderlyingType(ptr.Target)
		if s, ok := target.(*btf.Struct); ok && s.Name == "bpf_dynptr" {
			// ARG_PTR_TO_DYNPTR | MEM_RDONLY (dynptr.go).
			args[i] = globalArg{kind: globalDynptr}
			continue
		}
		size, err := btf.Sizeof(target)
		if _, void := target.(*btf.Void); void || err != nil || size < 0 {
			return nil, fmt.Sprintf("arg#%d reference type('%s %s') size cannot be determined: -22", i, kindName(target), target.TypeName())
		}
		args[i] = globalArg{kind: globalMem, size: uint32(size), nullable: !nonnull}
	}
	return args, ""
}

// isContextType reports whether a pointer's target is the program's
// context struct, by name (the kernel's btf_is_prog_ctx_type).
func (v *verifier) isContextType(t btf.Type) bool {
	s, ok := btf.UnderlyingType(t).(*btf.Struct)
	if !ok {
		return false
	}
	for _, n := range v.pt.ContextNames {
		if s.Name == n {
			return true
		}
	}
	return false
}

// ctxTagTarget reports whether an arg:ctx argument's target may stand for
// the context: void, or the context struct.
func (v *verifier) ctxTagTarget(t btf.Type) bool {
	if _, ok := btf.UnderlyingType(t).(*btf.Void); ok {
		return true
	}
	return v.isContextType(t)
}

// typeString names a type as C does ("struct foo", "int").
func typeString(t btf.Type) string {
	switch t := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	case *btf.Enum:
		return "enum " + t.Name
	case *btf.Void:
		return "void"
	case *btf.Pointer:
		return typeString(t.Target) + " *"
	default:
		return t.TypeName()
	}
}

// callGlobal verifies a call to a global function as the kernel does
// (check_func_call, btf_check_subprog_call): the caller's arguments are
// checked against the prototype and the call is not followed; it returns
// an unknown scalar and clobbers R1-R5. The function itself is verified
// later, once, from its prototype alone (verifyGlobals).
func (v *verifier) callGlobal(pc, sub int) error {
	m := &v.funcs[sub]
	v.prepareArgs(sub)
	caller := v.cur.cur()
	if err := v.checkGlobalArgs(pc, caller, m); err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		last := v.errorf(pc, "Caller passes invalid args into func#%d ('%s')", sub, m.name)
		return &Error{Insn: pc, Msg: e.Msg + "\n" + last.(*Error).Msg}
	}
	v.log.printf("Func#%d ('%s') is global and assumed valid.\n", sub, m.name)
	if err := v.checkGlobalThrow(pc, sub); err != nil {
		return err
	}
	if m.changesPkt {
		invalidatePackets(v.cur)
	}
	m.called = true
	for r := isa.R1; r <= isa.R5; r++ {
		caller.Regs[r] = Reg{Type: NotInit}
	}
	caller.Regs[0] = unknownScalar()
	v.pc = pc + 1
	return nil
}

// checkGlobalArgs checks the caller's registers against a global
// function's arguments (the kernel's btf_check_func_arg_match).
func (v *verifier) checkGlobalArgs(pc int, caller *Frame, m *funcMeta) error {
	if m.protoErr != "" {
		return v.errorf(pc, "%s", m.protoErr)
	}
	for i, a := range m.args {
		regno := isa.Register(i + 1)
		reg := &caller.Regs[regno]
		switch a.kind {
		case globalScalar:
			if reg.Type != ScalarValue {
				return v.errorf(pc, "R%d is not a scalar", regno)
			}
		case globalCtx:
			if reg.Type == PtrToCtx {
				if err := v.checkPtrOffReg(pc, regno, reg, false); err != nil {
					return err
				}
			}
			if reg.Type != PtrToCtx {
				return v.errorf(pc, "arg#%d expects pointer to ctx", i)
			}
		case globalDynptr:
			if reg.Type != PtrToStack && reg.Type != PtrToConstDynptr {
				return v.errorf(pc, "arg#%d expected pointer to stack or const struct bpf_dynptr", i)
			}
			if _, err := v.initDynptr(pc, regno, reg, DynptrInvalid); err != nil {
				return err
			}
		case globalMem:
			if reg.Type == ScalarValue && reg.IsConst() && reg.Const() == 0 {
				// NULL: the callee must check for it, nullable or not.
				if !a.nullable {
					return v.errorf(pc, "arg#%d is expected to be non-NULL", i)
				}
				continue
			}
			// Checked as readable and then writable memory, as if it
			// were not NULL; the callee may write it.
			tmp := *reg
			tmp.Flags &^= MaybeNull
			var raw rawWrite
			if err := v.checkHelperMem(pc, regno, &tmp, int(a.size), ArgMem, true, true, &raw); err != nil {
				return err
			}
			if err := v.checkHelperMem(pc, regno, &tmp, int(a.size), ArgWriteMemOrNull, true, true, &raw); err != nil {
				return err
			}
			if !a.nullable && reg.maybeNull() {
				return v.errorf(pc, "arg#%d is expected to be non-NULL", i)
			}
		}
	}
	return nil
}

// globalEntry is the state a global function is verified from: its
// arguments typed from the prototype, nothing of any caller.
func (v *verifier) globalEntry(sub int) *State {
	f := &Frame{CallSite: -1, Subprog: sub}
	for i := range f.Regs {
		f.Regs[i] = Reg{Type: NotInit}
	}
	for i, a := range v.funcs[sub].args {
		r := &f.Regs[i+1]
		switch a.kind {
		case globalScalar:
			*r = unknownScalar()
		case globalCtx:
			*r = Reg{Type: PtrToCtx, Scalar: Const(0)}
		case globalDynptr:
			*r = Reg{Type: PtrToConstDynptr, ID: v.newID(), DynptrKind: dynptrAnyKind, Scalar: Const(0)}
		case globalMem:
			*r = Reg{Type: PtrToMem, MemSize: a.size, Scalar: Const(0)}
			if a.nullable {
				r.Flags, r.ID = MaybeNull, v.newID()
			}
		}
	}
	f.Regs[10] = Reg{Type: PtrToStack, Scalar: Const(0)}
	st := &State{pool: &framePool{}}
	st.pushFrame(f)
	return st
}

// verifyGlobals verifies each global function that a verified path calls,
// once, from its prototype, until no new one is called (the kernel's
// do_check_subprogs). Instructions processed add up over all of them.
func (v *verifier) verifyGlobals() error {
	for progress := true; progress; {
		progress = false
		for sub := 1; sub < len(v.funcs); sub++ {
			m := &v.funcs[sub]
			if !m.global || !m.called || m.verified {
				continue
			}
			v.log.printf("Validating %s() func#%d...\n", m.name, sub)
			if err := v.checkExceptionEntry(sub); err != nil {
				return err
			}
			v.log.lastLine = 0 // as the kernel's do_check_common
			v.cur, v.pc, v.hist = v.globalEntry(sub), v.subs[sub].Start, v.hist[:0]
			if err := v.explore(); err != nil {
				return err
			}
			v.log.printf("Func#%d ('%s') is safe for any args that match its prototype\n", sub, m.name)
			m.verified, progress = true, true
		}
	}
	return nil
}
