package helper

import (
	"encoding/binary"
	"errors"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// stackHelpers report the stacks of the run's world (kernel/bpf/stackmap.c,
// runner.Trace): bpf_get_stack, and the raw tracepoints' form of it, whose
// buffer the kernel's prototype takes as initialised memory; and
// bpf_get_stackid, which stores them in a stack trace map.
var stackHelpers = []Helper{
	{Proto: Proto{Name: "bpf_get_stackid", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything}}, Func: helperGetStackid},
	{Proto: Proto{Name: "bpf_get_stack", Args: [5]ArgType{ArgCtx, ArgUninitMem, ArgConstSizeOrZero, ArgAnything}}, Func: helperGetStack},
	{Proto: Proto{Name: "bpf_get_stack", Args: [5]ArgType{ArgCtx, ArgMem, ArgConstSizeOrZero, ArgAnything}}, Func: helperGetStack, Variant: "raw_tp"},
}

// bpf_get_stack's flags.
const (
	stackSkipMask = 0xff
	stackUser     = 1 << 8
	stackBuildID  = 1 << 11
	// maxStack is the kernel's default sysctl_perf_event_max_stack.
	maxStack = 127
	// buildIDSize is the size of struct bpf_stack_build_id, statusIP its
	// status for an address without a build id (BPF_STACK_BUILD_ID_IP).
	buildIDSize = 32
	statusIP    = 2
)

// helperGetStack is bpf_get_stack(ctx, buf, size, flags): the kernel's (or,
// with BPF_F_USER_STACK, the user's) stack of the world, past the first
// (flags & BPF_F_SKIP_FIELD_MASK) frames, as many as fit, the rest of buf
// zeroed; it returns the bytes filled. With BPF_F_USER_BUILD_ID each frame
// is a struct bpf_stack_build_id holding the address (bpfvm's world has
// no build ids). -EINVAL (buf zeroed) for unknown flags, build ids of the
// kernel's stack, or a size that is not a whole number of frames; -EFAULT
// when the stack has fewer frames than it skips.
func helperGetStack(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	size := uint32(r3)
	if _, err := memArg(e, r2, size, true); err != nil {
		return 0, err
	}
	if !writable(e, r2, uint64(size)) {
		// The raw tracepoints' buffer may be read-only memory, which
		// the kernel would write: refused here.
		return neg(efault), nil
	}
	buf := vm.Slice(r2, uint64(size))
	flags := r4
	user, buildID := flags&stackUser != 0, flags&stackBuildID != 0
	elem := uint32(8)
	if buildID {
		elem = buildIDSize
	}
	if flags&^(stackSkipMask|stackUser|stackBuildID) != 0 || buildID && !user || size%elem != 0 {
		clear(buf)
		return neg(einval), nil
	}
	w := runner.Of(e).Trace()
	stack := w.KernelStack
	if user {
		stack = w.UserStack
	}
	skip, n := int(flags&stackSkipMask), int(size/elem)
	stack = stack[:min(len(stack), min(n+skip, maxStack))]
	if len(stack) < skip {
		clear(buf)
		return neg(efault), nil
	}
	stack = stack[skip:]
	stack = stack[:min(len(stack), n)]
	clear(buf)
	for i, ip := range stack {
		if buildID {
			f := buf[i*buildIDSize:]
			binary.LittleEndian.PutUint32(f, statusIP)
			binary.LittleEndian.PutUint64(f[24:], ip)
			continue
		}
		binary.LittleEndian.PutUint64(buf[8*i:], ip)
	}
	return uint64(len(stack)) * uint64(elem), nil
}

// writable reports whether a helper may write the n bytes at addr: the
// stack, or a writable region of the run (the context and read-only map
// values are not).
func writable(e *vm.Env, addr, n uint64) bool {
	if s := e.Stack; addr >= s.Start && addr <= s.End && n <= s.End-addr {
		return true
	}
	for _, r := range e.Regions {
		if r.Writable && addr >= r.Start && addr <= r.End && n <= r.End-addr {
			return true
		}
	}
	return n == 0
}

// helperGetStackid is bpf_get_stackid(ctx, map, flags): the kernel's (or,
// with BPF_F_USER_STACK, the user's) stack of the world, past the first
// (flags & BPF_F_SKIP_FIELD_MASK) frames and as deep as the map's values,
// stored in the stack trace map (maps.StackStore); it returns the stack's
// id. -EINVAL for unknown flags, -EFAULT when the stack has no frame past
// those skipped, -EEXIST when another stack holds the id and flags lack
// BPF_F_REUSE_STACKID.
func helperGetStackid(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r2)
	if err != nil {
		return 0, err
	}
	flags := r3
	st, ok := m.(maps.StackStore)
	if !ok || flags&^(stackSkipMask|stackUser|maps.StackFastCmp|maps.StackReuseID) != 0 {
		// Only unverified programs pass another map.
		return neg(einval), nil
	}
	w := runner.Of(e).Trace()
	stack := w.KernelStack
	if flags&stackUser != 0 {
		stack = w.UserStack
	}
	skip, elem := int(flags&stackSkipMask), st.FrameSize()
	depth := min(int(m.Spec().ValueSize/elem)+skip, maxStack)
	stack = stack[:min(len(stack), depth)]
	if len(stack) <= skip {
		return neg(efault), nil
	}
	stack = stack[skip:]
	frames := make([]byte, len(stack)*int(elem))
	for i, ip := range stack {
		if elem == buildIDSize {
			binary.LittleEndian.PutUint32(frames[i*buildIDSize:], statusIP)
			binary.LittleEndian.PutUint64(frames[i*buildIDSize+24:], ip)
			continue
		}
		binary.LittleEndian.PutUint64(frames[8*i:], ip)
	}
	id, err := st.StoreStack(frames, flags)
	if errors.Is(err, maps.ErrKeyExist) {
		return neg(eexist), nil
	}
	return uint64(id), nil
}
