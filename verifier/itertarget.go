package verifier

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
)

// Iterator programs (BPF_TRACE_ITER): their target, the kernel function
// bpf_iter_<target> whose prototype types the context, and what each
// target registers about its arguments (struct bpf_iter_reg's
// ctx_arg_info): the element pointers may be NULL (the last run), some are
// trusted; map iterators' keys and values are buffers (PTR_TO_BUF).

// IterPrefix prefixes an iterator target's name to give the function
// typing its programs' context.
const IterPrefix = "bpf_iter_"

// iterArg is what a target registers for one pointer argument.
type iterArg struct {
	flags uint8
	// buf says the argument is a buffer (the map's key or value), not a
	// PTR_TO_BTF_ID.
	buf bool
}

// iterTargets are the kernel's iterator targets by name, with their
// element arguments by name (meta is every target's first, trusted), as
// the running 6.18 kernel types them (checked element by element; it
// refuses sockmap, bpf_sk_storage_map and bpf_map_elem programs here with
// EPERM, so their buffers are 6.18's source). An argument a target does
// not register is a trusted PTR_TO_BTF_ID, never NULL (the map of the map
// element iterators, which the attach names).
var iterTargets = map[string]map[string]iterArg{
	"task":               {"task": {flags: MaybeNull | Trusted}},
	"task_file":          {"task": {flags: MaybeNull}, "file": {flags: MaybeNull}},
	"task_vma":           {"task": {flags: MaybeNull}, "vma": {flags: MaybeNull}},
	"bpf_map":            {"map": {flags: MaybeNull | Trusted}},
	"bpf_map_elem":       {"key": {buf: true, flags: Rdonly}, "value": {buf: true}},
	"bpf_prog":           {"prog": {flags: MaybeNull}},
	"bpf_link":           {"link": {flags: MaybeNull}},
	"cgroup":             {"cgroup": {flags: MaybeNull | Trusted}},
	"ksym":               {"ksym": {flags: MaybeNull}},
	"kmem_cache":         {"s": {flags: MaybeNull | Trusted}},
	"tcp":                {"sk_common": {flags: MaybeNull | Trusted}},
	"udp":                {"udp_sk": {flags: MaybeNull | Trusted}},
	"unix":               {"unix_sk": {flags: MaybeNull}},
	"netlink":            {"sk": {flags: MaybeNull}},
	"ipv6_route":         {"rt": {flags: MaybeNull}},
	"sockmap":            {"key": {buf: true, flags: Rdonly}, "sk": {flags: MaybeNull}},
	"bpf_sk_storage_map": {"sk": {flags: MaybeNull}, "value": {buf: true}},
	"dmabuf":             {"dmabuf": {flags: MaybeNull}},
}

// resolveIter finds iterator target name, as the kernel's
// bpf_iter_prog_supported: a registered target whose bpf_iter_<name>
// function is in the kernel's BTF.
func resolveIter(spec *btf.Spec, target *AttachTarget, name string) (*AttachTarget, error) {
	if _, ok := iterTargets[name]; !ok {
		return nil, fmt.Errorf("%w: no iterator target %s", ErrAttachTarget, name)
	}
	fname := IterPrefix + name
	var fn *btf.Func
	if err := spec.TypeByName(fname, &fn); err != nil {
		return nil, fmt.Errorf("%w: iterator target %s: %w", ErrAttachTarget, name, err)
	}
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok || len(proto.Params) == 0 {
		return nil, fmt.Errorf("%w: %s has no prototype", ErrAttachTarget, fname)
	}
	target.Name, target.Proto, target.Iter = fname, proto, name
	return target, nil
}

// iterArgLoad is what loading iterator argument param gives where its
// target registers it (the kernel's ctx_arg_info), ok false elsewhere.
func (v *verifier) iterArgLoad(a access, param btf.FuncParam, target btf.Type) (Reg, bool, error) {
	ia, ok := iterTargets[v.opts.Attach.Iter][strings.TrimSuffix(param.Name, "__nullable")]
	if !ok {
		return Reg{}, false, nil
	}
	if ia.buf {
		// PTR_TO_BUF, whose bounds the attach checks against the
		// map's key and value sizes.
		return Reg{Type: PtrToBuf, Flags: MaybeNull | ia.flags&Rdonly, ID: v.newID(), Scalar: Const(0)}, true, nil
	}
	if !isStructType(target) {
		return Reg{}, false, nil
	}
	return v.btfPtr(target, ia.flags), true, nil
}

// btfIDArg checks a helper's ArgBTFID argument as the kernel's
// check_reg_type for ARG_PTR_TO_BTF_ID: a plain, trusted or RCU pointer
// to a kernel object, not NULL, at its start, of struct want or of a
// struct whose first member is one (btf_struct_ids_match).
func (v *verifier) btfIDArg(pc int, regno isa.Register, reg *Reg, want string) error {
	if reg.Type != PtrToBTFID || reg.maybeNull() || reg.Flags&Untrusted != 0 {
		return v.errorf(pc, "R%d type=%s expected=ptr_, trusted_ptr_, rcu_ptr_", regno, regTypeString(reg))
	}
	if reg.Off < 0 || !reg.IsConst() || reg.Const() != 0 {
		// The kernel's check_func_arg_reg_off for PTR_TO_BTF_ID.
		return v.errorf(pc, "R%d is ptr_%s invalid negative off=%d", regno, v.btfName(reg), reg.Off)
	}
	return v.btfStructMatch(pc, regno, reg, want)
}

// sockBTFArg checks a PTR_TO_BTF_ID passed as a socket
// (ARG_PTR_TO_BTF_ID_SOCK_COMMON): sock_common or a struct starting with
// one, at its start when the helper releases it (check_func_arg_reg_off).
func (v *verifier) sockBTFArg(pc int, regno isa.Register, reg *Reg, release bool) error {
	if !reg.IsConst() || reg.Const() != 0 {
		return v.errorf(pc, "R%d invalid variable offset: off=%d, var_off=%s", regno, reg.Off, reg.Scalar.Var)
	}
	if release && reg.Off != 0 {
		return v.errorf(pc, "R%d must have zero offset when passed to release func or trusted arg to kfunc", regno)
	}
	return v.btfStructMatch(pc, regno, reg, "sock_common")
}

// btfStructMatch checks that the kernel object reg points to, at its
// fixed offset, is a struct want, as btf_struct_ids_match: the pointed-to
// struct itself at offset 0, else the struct member starting at the
// offset (walking into the members holding it), else that member's first
// member, and so on.
func (v *verifier) btfStructMatch(pc int, regno isa.Register, reg *Reg, want string) error {
	t, off := v.btfType(reg), int(reg.Off)
	if off == 0 && typeName(t) == want {
		return nil
	}
	for depth := 0; depth < 32; depth++ {
		next, ok := structAt(t, off)
		if !ok {
			break
		}
		if typeName(next) == want {
			return nil
		}
		t, off = next, 0
	}
	return v.errorf(pc, "R%d is of type %s but %s is expected", regno, v.btfName(reg), want)
}

// structAt is btf_struct_walk's WALK_STRUCT for a 1-byte access at off of
// struct t: the struct member starting at off, found through the struct
// members holding it.
func structAt(t btf.Type, off int) (btf.Type, bool) {
	for range 32 {
		ms, _ := structMembers(t)
		found := false
		for _, m := range ms {
			mt := btf.UnderlyingType(m.Type)
			if !isStructType(mt) || m.BitfieldSize != 0 {
				continue
			}
			moff := int(m.Offset.Bytes())
			size, err := btf.Sizeof(mt)
			if err != nil || off < moff || off >= moff+size {
				continue
			}
			if off == moff {
				return mt, true
			}
			t, off, found = mt, off-moff, true
			break
		}
		if !found {
			return nil, false
		}
	}
	return nil, false
}
