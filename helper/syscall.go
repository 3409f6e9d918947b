package helper

import (
	"bytes"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// syscallHelpers are the syscall program type's own (kernel/bpf/syscall.c):
// bpf() and close() from BPF, and the symbol table. bpfvm's world holds no
// file descriptors and makes no kernel objects, so bpf_sys_bpf checks its
// command and attributes as the kernel does and then fails as the kernel
// fails for a descriptor or id that does not exist; bpf_sys_close fails
// with EBADF; bpf_btf_find_by_name_kind searches the kernel BTF the
// program was verified against; bpf_kallsyms_lookup_name reads the
// world's symbols (runner.Trace.Symbols).
var syscallHelpers = []Helper{
	{Proto: Proto{Name: "bpf_sys_bpf", Args: [5]ArgType{ArgAnything, ArgMem, ArgConstSize}}, Func: helperSysBPF},
	{Proto: Proto{Name: "bpf_sys_close", Args: [5]ArgType{ArgAnything}}, Func: helperSysClose},
	{Proto: Proto{Name: "bpf_btf_find_by_name_kind", Args: [5]ArgType{ArgMem, ArgConstSize, ArgAnything, ArgAnything}, ReadsBTF: true}, Func: helperBTFFindByNameKind},
	{Proto: Proto{Name: "bpf_kallsyms_lookup_name", Args: [5]ArgType{ArgMem, ArgConstSizeOrZero, ArgAnything, ArgPtrToLong}}, Func: helperKallsymsLookupName},
}

const ebadf = 9

// The bpf() commands bpf_sys_bpf takes (enum bpf_cmd), and the size of
// Linux 6.18's union bpf_attr.
const (
	bpfMapCreate         = 0
	bpfMapUpdateElem     = 2
	bpfMapDeleteElem     = 3
	bpfProgLoad          = 5
	bpfMapGetFDByID      = 14
	bpfRawTracepointOpen = 17
	bpfBTFLoad           = 18
	bpfMapFreeze         = 22
	bpfLinkCreate        = 28
	bpfAttrSize          = 168
)

// helperSysBPF is bpf_sys_bpf(cmd, attr, attr_size): commands other than
// the nine the kernel allows from programs are -EINVAL; attributes past
// union bpf_attr must be zero (-E2BIG, bpf_check_uarg_tail_zero); the map
// element commands and freeze refuse attributes past their last field
// (-EINVAL, CHECK_ATTR). Then every command needs an object the world
// does not have: the map and link commands a file descriptor (-EBADF, as
// for one not open), BPF_MAP_GET_FD_BY_ID a map of that id (-ENOENT), and
// the commands that create maps, programs or BTF -EOPNOTSUPP: bpfvm does
// not let programs make kernel objects.
func helperSysBPF(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	size := uint32(r3)
	if _, err := memArg(e, r2, size, false); err != nil {
		return 0, err
	}
	attr := vm.Slice(r2, uint64(size))
	last := uint32(0) // the end of the command's last field, 0 unchecked
	switch int32(r1) {
	case bpfMapUpdateElem, bpfMapDeleteElem:
		last = 32
	case bpfMapFreeze:
		last = 4
	case bpfMapCreate, bpfProgLoad, bpfMapGetFDByID, bpfRawTracepointOpen, bpfBTFLoad, bpfLinkCreate:
	default:
		return neg(einval), nil
	}
	if len(attr) > bpfAttrSize {
		if nonZero(attr[bpfAttrSize:]) {
			return neg(e2big), nil
		}
		attr = attr[:bpfAttrSize]
	}
	if last != 0 && uint32(len(attr)) > last && nonZero(attr[last:]) {
		return neg(einval), nil
	}
	switch int32(r1) {
	case bpfMapGetFDByID:
		return neg(enoent), nil
	case bpfMapCreate, bpfProgLoad, bpfBTFLoad:
		return neg(eopnotsupp), nil
	}
	return neg(ebadf), nil
}

// nonZero reports whether b holds a byte other than 0.
func nonZero(b []byte) bool {
	return bytes.ContainsFunc(b, func(r rune) bool { return r != 0 })
}

// helperSysClose is bpf_sys_close(fd): close_fd of a descriptor the
// world does not have, -EBADF.
func helperSysClose(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return neg(ebadf), nil
}

// helperKallsymsLookupName is bpf_kallsyms_lookup_name(name, name_sz,
// flags, res): flags other than 0 and a name that is not NUL-terminated
// in name_sz > 1 bytes are -EINVAL (res left as it is); otherwise *res is
// the symbol's address in the world's symbol table (Trace.Symbols), the
// string up to its first NUL, and the result 0, or 0 and -ENOENT for a
// symbol the table lacks.
func helperKallsymsLookupName(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	n := uint32(r2)
	if _, err := memArg(e, r1, n, false); err != nil {
		return 0, err
	}
	if _, err := memArg(e, r4, 8, true); err != nil {
		return 0, err
	}
	if int32(r3) != 0 {
		vm.StoreSized(r4, 8, 0)
		return neg(einval), nil
	}
	name := vm.Slice(r1, uint64(n))
	if int32(n) <= 1 || name[n-1] != 0 {
		vm.StoreSized(r4, 8, 0)
		return neg(einval), nil
	}
	name, _ = cString(name)
	addr := runner.Of(e).Trace().Symbols[string(name)]
	vm.StoreSized(r4, 8, addr)
	if addr == 0 {
		return neg(enoent), nil
	}
	return 0, nil
}

// helperBTFFindByNameKind is bpf_btf_find_by_name_kind(name, name_sz,
// kind, flags): flags other than 0 and a name that is not NUL-terminated
// in name_sz > 1 bytes are -EINVAL; otherwise the id of the first type of
// that name and kind (the low 8 bits of kind, as the kernel's u8) in the
// kernel BTF the program was verified against (runner.Program.KernelTypes:
// the host's vmlinux, whose ids are the kernel's, or bpfvm's shipped
// types), -ENOENT for none, for "void" and for kind 0. bpfvm's kernel BTF
// is vmlinux's alone: no module's types, so no BTF object fd in the high
// half.
func helperBTFFindByNameKind(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	n := uint32(r2)
	if _, err := memArg(e, r1, n, false); err != nil {
		return 0, err
	}
	if int32(r4) != 0 {
		return neg(einval), nil
	}
	b := vm.Slice(r1, uint64(n))
	if int32(n) <= 1 || b[n-1] != 0 {
		return neg(einval), nil
	}
	name, _ := cString(b)
	spec := runner.Of(e).Program().KernelTypes
	kind := uint8(r3)
	if spec == nil || kind == 0 || string(name) == "void" {
		return neg(enoent), nil
	}
	types, err := spec.AnyTypesByName(string(name))
	if err != nil {
		return neg(enoent), nil
	}
	best := btf.TypeID(0)
	for _, t := range types {
		if btfKind(t) != kind {
			continue
		}
		if id, err := spec.TypeID(t); err == nil && (best == 0 || id < best) {
			best = id
		}
	}
	if best == 0 {
		return neg(enoent), nil
	}
	return uint64(best), nil
}

// btfKind is the kernel's BTF_KIND_* of a type.
func btfKind(t btf.Type) uint8 {
	switch t := t.(type) {
	case *btf.Int:
		return 1
	case *btf.Pointer:
		return 2
	case *btf.Array:
		return 3
	case *btf.Struct:
		return 4
	case *btf.Union:
		return 5
	case *btf.Enum:
		if t.Size == 8 {
			return 19
		}
		return 6
	case *btf.Fwd:
		return 7
	case *btf.Typedef:
		return 8
	case *btf.Volatile:
		return 9
	case *btf.Const:
		return 10
	case *btf.Restrict:
		return 11
	case *btf.Func:
		return 12
	case *btf.FuncProto:
		return 13
	case *btf.Var:
		return 14
	case *btf.Datasec:
		return 15
	case *btf.Float:
		return 16
	case *btf.TypeTag:
		return 18
	}
	return 0
}
