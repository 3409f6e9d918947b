package verifier

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/progtype"
)

// The context of tracing programs (progtype.Type.BTFArgs): the attach
// target's arguments, typed by its BTF prototype, as the kernel's
// btf_ctx_access gives them.

// AttachTarget is the kernel function or tracepoint a tracing program
// attaches to: what its context holds.
type AttachTarget struct {
	// Name is the function's or the tracepoint's name.
	Name string
	// Proto is the function's prototype, or the tracepoint's (that of
	// its btf_trace_<name> typedef), whose first parameter, void *__data,
	// the context does not hold.
	Proto *btf.FuncProto
	// Tracepoint says Proto is a tracepoint's.
	Tracepoint bool
	// Attach is the program's attach type.
	Attach ebpf.AttachType
	// Hook is an LSM program's hook, without the bpf_lsm_ prefix Name
	// has.
	Hook string
	// Iter is an iterator's target, without the bpf_iter_ prefix.
	Iter string
}

// ErrAttachTarget is wrapped by the errors of attach targets that cannot
// be found or attached to.
var ErrAttachTarget = errors.New("invalid attach target")

// ResolveAttach finds the attach target name of a tracing program of
// attach type a in the kernel's BTF, as the kernel's
// bpf_check_attach_target: a tracepoint's btf_trace_<name> typedef for
// tp_btf, a function for fentry, fexit and fmod_ret, whose prototype the
// trampoline can pass (at most MaxTracingArgs slots of scalars, pointers
// and structs of up to 16 bytes).
func ResolveAttach(spec *btf.Spec, a ebpf.AttachType, name string) (*AttachTarget, error) {
	if spec == nil {
		return nil, fmt.Errorf("%w %s: no kernel BTF", ErrAttachTarget, name)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: a tracing program needs one (ProgramSpec.AttachTo)", ErrAttachTarget)
	}
	target := &AttachTarget{Name: name, Attach: a}
	switch a {
	case ebpf.AttachTraceRawTp:
		var td *btf.Typedef
		if err := spec.TypeByName("btf_trace_"+name, &td); err != nil {
			return nil, fmt.Errorf("%w: tracepoint %s: %w", ErrAttachTarget, name, err)
		}
		ptr, ok := td.Type.(*btf.Pointer)
		var proto *btf.FuncProto
		if ok {
			proto, ok = ptr.Target.(*btf.FuncProto)
		}
		if !ok || len(proto.Params) == 0 {
			return nil, fmt.Errorf("%w: btf_trace_%s is not a pointer to a function", ErrAttachTarget, name)
		}
		target.Proto, target.Tracepoint = proto, true
		return target, nil
	case ebpf.AttachTraceFEntry, ebpf.AttachTraceFExit, ebpf.AttachModifyReturn:
		var fn *btf.Func
		if err := spec.TypeByName(name, &fn); err != nil {
			return nil, fmt.Errorf("%w: function %s: %w", ErrAttachTarget, name, err)
		}
		proto, ok := fn.Type.(*btf.FuncProto)
		if !ok {
			return nil, fmt.Errorf("%w: %s has no prototype", ErrAttachTarget, name)
		}
		if err := trampolineProto(name, proto); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrAttachTarget, err)
		}
		if a == ebpf.AttachModifyReturn && !modifiable(name) {
			// The kernel allows the functions on its error injection
			// list too, which bpfvm does not know.
			return nil, fmt.Errorf("%w: %s() is not modifiable", ErrAttachTarget, name)
		}
		target.Proto = proto
		return target, nil
	case ebpf.AttachLSMMac, ebpf.AttachLSMCgroup:
		return resolveLSM(spec, target, name)
	case ebpf.AttachTraceIter:
		return resolveIter(spec, target, name)
	}
	return nil, fmt.Errorf("%w %s: attach type %s has none", ErrAttachTarget, name, a)
}

// modifiable reports whether fmod_ret programs may attach to a function:
// the LSM hooks and the kernel's own test functions.
func modifiable(name string) bool {
	return strings.HasPrefix(name, "security_") || strings.HasPrefix(name, "bpf_modify_return_test")
}

// trampolineProto checks that a trampoline can pass a function's
// arguments and return value (the kernel's btf_distill_func_proto):
// scalars and pointers, structs of up to 16 bytes as arguments only.
func trampolineProto(name string, proto *btf.FuncProto) error {
	if len(proto.Params) > progtype.MaxTracingArgs {
		return fmt.Errorf("The function %s has %d arguments. Too many.", name, len(proto.Params))
	}
	if ret := btf.UnderlyingType(proto.Return); !isVoid(ret) && (isStructType(ret) || passSize(ret) < 0) {
		return fmt.Errorf("The function %s return type %s is unsupported.", name, kindName(ret))
	}
	for i, p := range proto.Params {
		t := btf.UnderlyingType(p.Type)
		switch n := passSize(t); {
		case isVoid(t) && i == len(proto.Params)-1:
			return fmt.Errorf("The function %s with variable args is unsupported.", name)
		case isVoid(t) || n == 0:
			return fmt.Errorf("The function %s has malformed void argument.", name)
		case n < 0 || n > 16:
			return fmt.Errorf("The function %s arg%d type %s is unsupported.", name, i, kindName(t))
		}
	}
	return nil
}

// passSize is the size of a value of type t a trampoline passes (the
// kernel's __get_type_size): 8 for a pointer, the size of an int, enum,
// struct or union, -1 for anything else.
func passSize(t btf.Type) int {
	switch t := t.(type) {
	case *btf.Pointer:
		return 8
	case *btf.Int:
		return int(t.Size)
	case *btf.Enum:
		return int(t.Size)
	case *btf.Struct:
		return int(t.Size)
	case *btf.Union:
		return int(t.Size)
	}
	return -1
}

// slotSize is the bytes of context an argument or return value of type t
// takes: 8 for a pointer, 0 for void, its size rounded up to 8 otherwise.
func slotSize(t btf.Type) int64 {
	t = btf.UnderlyingType(t)
	if isVoid(t) {
		// No slot: a void function's return value is past the last
		// argument, as the kernel's btf_ctx_arg_idx counts it.
		return 0
	}
	if _, ok := t.(*btf.Pointer); ok {
		return 8
	}
	n, err := btf.Sizeof(t)
	if err != nil {
		return 8
	}
	return (int64(n) + 7) &^ 7
}

// kindName names the kind of a BTF type as the kernel's btf_type_str.
func kindName(t btf.Type) string {
	switch t.(type) {
	case *btf.Int:
		return "INT"
	case *btf.Pointer:
		return "PTR"
	case *btf.Array:
		return "ARRAY"
	case *btf.Struct:
		return "STRUCT"
	case *btf.Union:
		return "UNION"
	case *btf.Enum:
		return "ENUM"
	case *btf.Fwd:
		return "FWD"
	case *btf.Typedef:
		return "TYPEDEF"
	case *btf.Volatile:
		return "VOLATILE"
	case *btf.Const:
		return "CONST"
	case *btf.Restrict:
		return "RESTRICT"
	case *btf.Func:
		return "FUNC"
	case *btf.FuncProto:
		return "FUNC_PROTO"
	case *btf.Var:
		return "VAR"
	case *btf.Datasec:
		return "DATASEC"
	case *btf.Float:
		return "FLOAT"
	case *btf.TypeTag:
		return "TYPE_TAG"
	}
	return "UNKNOWN"
}

// tracingCtxAccess checks a context access of a tracing program (the
// kernel's tracing_prog_is_valid_access and btf_ctx_access) at off and
// gives what a load yields: a scalar for scalar and struct arguments and
// pointers to void or ints, a PtrToBTFID for pointers to structs (trusted
// in tp_btf programs), read-only.
func (v *verifier) tracingCtxAccess(off int64, a access) (Reg, error) {
	invalid := func() (Reg, error) {
		return Reg{}, v.errorf(a.pc, "invalid bpf_context access off=%d size=%d", off, a.size)
	}
	fail := func(format string, args ...any) (Reg, error) {
		v.log.printf(format+"\n", args...)
		return invalid()
	}
	if a.write || off%int64(a.size) != 0 {
		return invalid()
	}
	tg := v.opts.Attach
	if tg == nil || tg.Proto == nil {
		return Reg{}, v.errorf(a.pc, "tracing program without an attach target (ProgramSpec.AttachTo)")
	}
	name := tg.Name
	if off%8 != 0 {
		return fail("func '%s' offset %d is not multiple of 8", name, off)
	}
	params := tg.Proto.Params
	// The argument the slot belongs to; a tracepoint's first parameter
	// is not in the context but counted.
	arg, end := len(params)+1, int64(0)
	for i, p := range params {
		if end += slotSize(p.Type); off < end {
			arg = i
			break
		}
	}
	if arg > len(params) {
		if end += slotSize(tg.Proto.Return); off < end {
			arg = len(params)
		}
	}
	if tg.Tracepoint {
		params = params[1:]
	}
	nargs := len(params)
	if arg > nargs {
		return fail("func '%s' doesn't have %d-th argument", name, arg+1)
	}
	var t btf.Type
	if arg == nargs {
		switch tg.Attach {
		case ebpf.AttachLSMMac:
			if isSmallInt(btf.UnderlyingType(tg.Proto.Return)) {
				return v.retvalLoad(a.size), nil
			}
			t = tg.Proto.Return
		case ebpf.AttachTraceFExit, ebpf.AttachLSMCgroup:
			t = tg.Proto.Return
		case ebpf.AttachModifyReturn:
			t = btf.UnderlyingType(tg.Proto.Return)
			if !isSmallInt(t) {
				return fail("ret type %s not allowed for fmod_ret", kindName(t))
			}
		default:
			return fail("func '%s' doesn't have %d-th argument", name, arg+1)
		}
	} else {
		t = params[arg].Type
	}
	t = btf.UnderlyingType(t)
	switch t.(type) {
	case *btf.Enum, *btf.Struct, *btf.Union:
		return v.loadedScalar(a.size), nil
	case *btf.Pointer:
	default:
		if isSmallInt(t) {
			return v.loadedScalar(a.size), nil
		}
		return fail("func '%s' arg%d '%s' has type %s. Only pointer access is allowed", name, arg, typeName(t), kindName(t))
	}
	if a.size != 8 {
		return fail("func '%s' size %d must be 8", name, a.size)
	}
	target := btf.UnderlyingType(t.(*btf.Pointer).Target)
	if tg.Iter != "" && arg < nargs {
		// What the iterator's target registers for the argument
		// comes first (buffers before the struct pointer check).
		if r, ok, err := v.iterArgLoad(a, params[arg], target); ok || err != nil {
			return r, err
		}
	}
	if isVoid(target) {
		return v.loadedScalar(a.size), nil
	}
	if _, ok := target.(*btf.Int); ok {
		return v.loadedScalar(a.size), nil
	}
	if !isStructType(target) {
		return fail("func '%s' arg%d type %s is not a struct", name, arg, kindName(target))
	}
	if v.opts.KernelTypes != nil {
		if id, err := v.opts.KernelTypes.TypeID(target); err == nil {
			v.log.printf("func '%s' arg%d has btf_id %d type %s '%s'\n", name, arg, id, kindName(target), typeName(target))
		}
	}
	var flags uint8
	switch {
	case tg.Attach == ebpf.AttachTraceRawTp, tg.Attach == ebpf.AttachTraceIter:
		// The kernel's prog_args_trusted: tracepoints' and iterators'
		// arguments are trusted, fentry's and fexit's are not, LSM
		// hooks' but for those of objects being set up or freed.
		flags = Trusted
	case tg.Hook != "" && progtype.LSMHookTrusted(tg.Hook):
		flags = Trusted
	}
	if arg < nargs && strings.HasSuffix(params[arg].Name, "__nullable") {
		flags |= MaybeNull
	}
	if tg.Attach == ebpf.AttachTraceRawTp {
		maybeNull, maybeErr := rawTPArg(name, arg)
		if maybeNull {
			flags |= MaybeNull
		}
		if maybeErr {
			// The kernel checks the type first, then scrubs the
			// pointer (its message ends without a newline).
			v.log.printf("marking pointer arg%d as scalar as it may encode error", arg)
			return v.loadedScalar(a.size), nil
		}
	}
	return v.btfPtr(target, flags), nil
}

// isSmallInt reports whether t is an int of at most 8 bytes.
func isSmallInt(t btf.Type) bool {
	i, ok := t.(*btf.Int)
	return ok && i.Size <= 8
}

// Slots is the number of u64 context slots the target's arguments take
// (what a trampoline passes as nr_args); 0 for a nil target.
func (t *AttachTarget) Slots() uint32 {
	if t == nil || t.Proto == nil {
		return 0
	}
	params := t.Proto.Params
	if t.Tracepoint && len(params) > 0 {
		params = params[1:]
	}
	var n int64
	for _, p := range params {
		n += slotSize(p.Type)
	}
	return uint32(n / 8)
}

// HasReturn reports whether the slot after the arguments holds the
// target's return value for the program (fexit, fmod_ret).
func (t *AttachTarget) HasReturn() bool {
	return t != nil && (t.Attach == ebpf.AttachTraceFExit || t.Attach == ebpf.AttachModifyReturn)
}
