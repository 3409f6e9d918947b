package verifier

import (
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
)

// Generic checking of kfunc arguments against the kfunc's BTF prototype,
// as the kernel's check_kfunc_args: scalars (constants for __k), pointers
// to kernel structs (PTR_TO_BTF_ID, of the prototype's type or one that
// starts with it, trusted, referenced or RCU as the flags ask), the
// program's context, memory with its size (__sz, __szk), constant strings
// (__str), NULL where __nullable allows it; arguments named __ign are not
// checked. The suffixes are the kernel's (is_kfunc_arg_*).

// kfuncMeta is what the arguments of a call gave (the kernel's
// bpf_kfunc_call_arg_meta).
type kfuncMeta struct {
	// refObj is the reference of the referenced argument, the one a
	// KF_RELEASE kfunc releases.
	refObj uint32
	// iter is where the iterator argument of an iterator kfunc is
	// (iterArg), iterOK whether there is one.
	iter   slotRef
	iterOK bool
}

// kfuncArgKind is how an argument is checked (the kernel's enum
// kfunc_ptr_arg_type).
type kfuncArgKind int

const (
	kfArgNull kfuncArgKind = iota
	kfArgCtx
	kfArgBTFID
	kfArgMem
	kfArgMemSize
	kfArgConstStr
)

// argSuffix reports whether a parameter's name ends in the kernel's
// __suffix.
func argSuffix(p btf.FuncParam, suffix string) bool {
	return strings.HasSuffix(p.Name, "__"+suffix)
}

// skipModifiers resolves typedefs and qualifiers (btf_type_skip_modifiers).
func skipModifiers(t btf.Type) btf.Type { return btf.UnderlyingType(t) }

// isScalarStruct reports whether t is a scalar or a struct of scalars and
// arrays of them, nested at most a few levels (__btf_type_is_scalar_struct).
func isScalarStruct(t btf.Type, depth int) bool {
	t = skipModifiers(t)
	if isScalarType(t) {
		return true
	}
	st, ok := t.(*btf.Struct)
	if !ok {
		return false
	}
	for _, m := range st.Members {
		mt := skipModifiers(m.Type)
		for {
			a, ok := mt.(*btf.Array)
			if !ok {
				break
			}
			mt = skipModifiers(a.Type)
		}
		if isScalarType(mt) {
			continue
		}
		if _, ok := mt.(*btf.Struct); !ok || depth >= 2 || !isScalarStruct(mt, depth+1) {
			return false
		}
	}
	return true
}

// isTrustedReg reports whether a pointer may go where a trusted one must
// (the kernel's is_trusted_reg): referenced, or trusted without flags
// that make it unsafe.
func isTrustedReg(r *Reg) bool {
	if r.RefID != 0 {
		return true
	}
	return r.Flags&(Trusted|Alloc) != 0 && r.Flags&(Untrusted|RCU|MaybeNull|Rdonly) == 0
}

// isRCUReg reports whether a pointer is an RCU one (is_rcu_reg).
func isRCUReg(r *Reg) bool { return r.Flags&RCU != 0 }

// isNullReg reports whether a register is the constant NULL.
func isNullReg(r *Reg) bool { return r.Type == ScalarValue && r.IsConst() && r.Const() == 0 }

// checkKfuncArgs checks a call's arguments against k's prototype.
func (v *verifier) checkKfuncArgs(pc int, k *helper.Kfunc, proto *btf.FuncProto) (kfuncMeta, error) {
	var meta kfuncMeta
	f := v.cur.cur()
	params := proto.Params
	if len(params) > 5 {
		return meta, v.errorf(pc, "Function %s has %d > %d args", k.Name, len(params), 5)
	}
	// Linux 6.18.44 takes every kfunc's pointer arguments as trusted
	// (KF_TRUSTED_ARGS is the default); KF_RCU lets RCU pointers in too.
	trusted := true
	rcu := k.Flags&helper.KfRCU != 0
	release := k.Flags&helper.KfRelease != 0
	releaseRegno := isa.Register(0)
	for i := 0; i < len(params); i++ {
		p := params[i]
		regno := isa.Register(i + 1)
		if _, err := v.readReg(pc, regno); err != nil {
			return meta, err
		}
		reg := &f.Regs[regno]
		t := skipModifiers(p.Type)
		if argSuffix(p, "ign") {
			continue
		}
		if i == 0 && isIterKfunc(k) {
			// The kernel's KF_ARG_PTR_TO_ITER (iter.go).
			if err := v.iterArg(pc, k, reg, &meta); err != nil {
				return meta, err
			}
			continue
		}
		if isScalarType(t) {
			if reg.Type != ScalarValue {
				return meta, v.errorf(pc, "R%d is not a scalar", regno)
			}
			if argSuffix(p, "k") {
				if !reg.IsConst() {
					return meta, v.errorf(pc, "R%d must be a known constant", regno)
				}
				v.markRegPrecise(regno)
			}
			continue
		}
		ptr, ok := t.(*btf.Pointer)
		if !ok {
			return meta, v.errorf(pc, "Unrecognized arg#%d type %s", i, kindName(t))
		}
		nullable := argSuffix(p, "nullable")
		if (isNullReg(reg) || reg.maybeNull()) && !nullable {
			return meta, v.errorf(pc, "Possibly NULL pointer passed to trusted arg%d", i)
		}
		if reg.RefID != 0 {
			if release && meta.refObj != 0 {
				return meta, v.errorf(pc, "verifier internal error: more than one arg with ref_obj_id R%d %d %d", regno, reg.RefID, meta.refObj)
			}
			meta.refObj = reg.RefID
			if release {
				releaseRegno = regno
			}
		}
		refT := skipModifiers(ptr.Target)
		kind, err := v.kfuncArgKind(pc, k, params, i, reg, refT)
		if err != nil {
			return meta, err
		}
		switch kind {
		case kfArgNull:
			continue
		case kfArgBTFID:
			if trusted || rcu {
				if !isTrustedReg(reg) {
					if !rcu {
						return meta, v.errorf(pc, "R%d must be referenced or trusted", regno)
					}
					if !isRCUReg(reg) {
						return meta, v.errorf(pc, "R%d must be a rcu pointer", regno)
					}
				}
			}
		}
		if release && reg.RefID != 0 {
			if reg.Off != 0 || !reg.Scalar.Var.IsConst() || reg.Scalar.Var.Value != 0 {
				return meta, v.errorf(pc, "R%d must have zero offset when passed to release func or trusted arg to kfunc", regno)
			}
		} else if kind != kfArgMem && kind != kfArgMemSize && kind != kfArgConstStr {
			if err := v.checkPtrOffReg(pc, regno, reg, true); err != nil {
				return meta, err
			}
		}
		switch kind {
		case kfArgCtx:
			if reg.Type != PtrToCtx {
				return meta, v.errorf(pc, "arg#%d expected pointer to ctx, but got %s", i, regTypeString(reg))
			}
		case kfArgBTFID:
			if reg.Type != PtrToBTFID || reg.Flags&Untrusted != 0 {
				return meta, v.errorf(pc, "arg#%d is %s expected %s or socket", i, regTypeString(reg), regTypeString(&Reg{Type: reg.Type, Flags: reg.Flags & (Trusted | Alloc)}))
			}
			if err := v.kfuncBTFIDArg(pc, k, i, reg, refT, release && reg.RefID != 0); err != nil {
				return meta, err
			}
		case kfArgMem:
			size, err := btf.Sizeof(refT)
			if err != nil {
				return meta, v.errorf(pc, "arg#%d reference type('%s %s') size cannot be determined: %v", i, kindName(refT), refT.TypeName(), err)
			}
			if err := v.checkHelperMem(pc, regno, reg, size, helper.ArgWriteMem, true, false, nil); err != nil {
				return meta, err
			}
		case kfArgMemSize:
			sizeReg := &f.Regs[regno+1]
			if _, err := v.readReg(pc, regno+1); err != nil {
				return meta, err
			}
			if err := v.kfuncMemSize(pc, regno, reg, sizeReg, argSuffix(params[i+1], "szk"), nullable || argSuffix(p, "opt")); err != nil {
				return meta, err
			}
			i++ // the size is checked
		case kfArgConstStr:
			if reg.Type != PtrToMapValue {
				return meta, v.errorf(pc, "arg#%d doesn't point to a const string", i)
			}
			if err := v.checkConstStr(pc, regno, reg); err != nil {
				return meta, err
			}
		}
	}
	if release && releaseRegno == 0 {
		return meta, v.errorf(pc, "release kernel function %s expects refcounted PTR_TO_BTF_ID", k.Name)
	}
	return meta, nil
}

// kfuncArgKind classifies a pointer argument (get_kfunc_ptr_arg_type).
func (v *verifier) kfuncArgKind(pc int, k *helper.Kfunc, params []btf.FuncParam, i int, reg *Reg, refT btf.Type) (kfuncArgKind, error) {
	p := params[i]
	if st, ok := refT.(*btf.Struct); ok && v.isCtxName(st.Name) {
		return kfArgCtx, nil
	}
	if argSuffix(p, "nullable") && isNullReg(reg) {
		return kfArgNull, nil
	}
	if argSuffix(p, "str") {
		return kfArgConstStr, nil
	}
	if reg.Type == PtrToBTFID {
		if !isStructType(refT) {
			return 0, v.errorf(pc, "kernel function %s args#%d pointer type %s %s is not supported", k.Name, i, kindName(refT), refT.TypeName())
		}
		return kfArgBTFID, nil
	}
	memSize := i+1 < len(params) && (argSuffix(params[i+1], "sz") || argSuffix(params[i+1], "szk"))
	_, void := refT.(*btf.Void)
	if !isScalarType(refT) && !isScalarStruct(refT, 0) && (!memSize || !void) {
		also := ""
		if memSize {
			also = "void, "
		}
		return 0, v.errorf(pc, "arg#%d pointer type %s %s must point to %sscalar, or struct with scalar", i, kindName(refT), refT.TypeName(), also)
	}
	if memSize {
		return kfArgMemSize, nil
	}
	return kfArgMem, nil
}

// isCtxName reports whether a struct is the program type's context as a
// kfunc prototype names it.
func (v *verifier) isCtxName(name string) bool {
	for _, n := range v.pt.ContextNames {
		if n == name && !strings.HasPrefix(n, "bpf_") {
			return false // a kernel struct behind the context is a PTR_TO_BTF_ID
		}
		if n == name {
			return true
		}
	}
	return false
}

// kfuncBTFIDArg checks a PTR_TO_BTF_ID argument's type
// (process_kf_arg_ptr_to_btf_id): the prototype's struct, or one whose
// first member (at the pointer's offset) is it; a released reference must
// be of the type itself (strict).
func (v *verifier) kfuncBTFIDArg(pc int, k *helper.Kfunc, i int, reg *Reg, refT btf.Type, strict bool) error {
	want, err := v.kfuncStruct(refT)
	if err != nil {
		return v.errorf(pc, "%v", err)
	}
	have := v.btfType(reg)
	same := reg.Off == 0 && sameStruct(have, want)
	if !same && !strict && reg.Off >= 0 {
		same = structIDsMatchBy(have, uint32(reg.Off), want)
	}
	if !same {
		return v.errorf(pc, "kernel function %s args#%d expected pointer to %s %s but R%d has a pointer to %s %s",
			k.Name, i, kindName(want), want.TypeName(), i+1, kindName(have), have.TypeName())
	}
	return nil
}

// sameStruct reports whether two structs are the same type: the same
// object, or, for a declared prototype's opaque struct, of the same name.
func sameStruct(a, b btf.Type) bool {
	if a == b {
		return true
	}
	bs, ok := b.(*btf.Struct)
	return ok && len(bs.Members) == 0 && bs.Size == 0 && a.TypeName() == bs.Name
}

// structIDsMatchBy is structIDsMatch comparing with sameStruct.
func structIDsMatchBy(t btf.Type, off uint32, want btf.Type) bool {
	for {
		var untrusted bool
		step, err := btfWalk(t, off, 1, &untrusted)
		if err != nil || step.res != walkStruct {
			return false
		}
		if sameStruct(step.next, want) {
			return true
		}
		t, off = step.next, 0
	}
}

// kfuncMemSize checks memory and its size argument (check_kfunc_mem_size_reg):
// the size a bounded scalar, a constant for __szk; NULL passes with a
// size of 0 where the pointer may be NULL.
func (v *verifier) kfuncMemSize(pc int, regno isa.Register, reg, size *Reg, konst, nullOK bool) error {
	sregno := regno + 1
	if size.Type != ScalarValue {
		return v.errorf(pc, "R%d is not a scalar", sregno)
	}
	if konst && !size.IsConst() {
		return v.errorf(pc, "R%d must be a known constant", sregno)
	}
	if size.Smin < 0 {
		return v.errorf(pc, "R%d min value is negative, either use unsigned or 'var &= const'", sregno)
	}
	if size.Umax >= maxVarOff {
		return v.errorf(pc, "R%d unbounded memory access, use 'var &= const' or 'if (var < const)'", sregno)
	}
	if err := v.checkHelperMem(pc, regno, reg, int(size.Umax), helper.ArgWriteMemOrNull, size.IsConst(), nullOK || size.Umin == 0, nil); err != nil {
		return err
	}
	v.markRegPrecise(sregno)
	return nil
}
