package helper

import (
	"sync/atomic"

	"github.com/bpfvm/bpfvm/vm"
)

// kptrHelpers move references in and out of map values' referenced kptr
// fields (kernel/bpf/helpers.c). The reference moves with the pointer:
// the field holds it until a program takes it back out, or the value is
// overwritten or its element or map goes (maps.freeKptrs, the kernel's
// destructor kfuncs).
var kptrHelpers = []Helper{
	{Proto: Proto{Name: "bpf_kptr_xchg", Args: [5]ArgType{ArgKptrDest, ArgKptrNew}, Ret: RetKptrOrNull}, Func: helperKptrXchg},
}

// helperKptrXchg is bpf_kptr_xchg(dst, ptr): ptr into the field at dst,
// atomically, and the field's old value out.
func helperKptrXchg(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	if err := e.Check(r1, 8, true); err != nil {
		return 0, err
	}
	return atomic.SwapUint64((*uint64)(vm.Ptr(r1)), r2), nil
}
