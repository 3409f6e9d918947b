package helper

import (
	"encoding/binary"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// traceHelpers are the tracing types' own (kernel/trace/bpf_trace.c): the
// probe reads of kernel and user memory, the current task's address, the
// probed function, the attach cookie, the perf event's counter and branch
// records, signals. They read the run's world (runner.Trace).
var traceHelpers = []Helper{
	{Proto: probeReadProto("bpf_probe_read_kernel"), Func: probeReadHelper(probeKernel)},
	{Proto: probeReadProto("bpf_probe_read_user"), Func: probeReadHelper(probeUser)},
	{Proto: probeReadProto("bpf_probe_read"), Func: probeReadHelper(probeCompat)},
	{Proto: probeReadProto("bpf_probe_read_kernel_str"), Func: probeReadStrHelper(false)},
	{Proto: probeReadProto("bpf_probe_read_user_str"), Func: probeReadStrHelper(true)},
	{Proto: probeReadProto("bpf_probe_read_str"), Func: probeReadStrCompat},
	{Proto: Proto{Name: "bpf_get_current_task"}, Func: helperGetCurrentTask},
	// The trampoline programs' view of their function (the kernel
	// inlines them, reading the slot count it keeps before the context).
	{Proto: Proto{Name: "bpf_get_func_ip", Args: [5]ArgType{ArgCtx}}, Func: helperGetFuncIPKprobe, Variant: "tracing"},
	{Proto: Proto{Name: "bpf_get_func_arg", Args: [5]ArgType{ArgCtx, ArgAnything, ArgPtrToLong}}, Func: helperGetFuncArg},
	{Proto: Proto{Name: "bpf_get_func_ret", Args: [5]ArgType{ArgCtx, ArgPtrToLong}}, Func: helperGetFuncRet},
	{Proto: Proto{Name: "bpf_get_func_arg_cnt", Args: [5]ArgType{ArgCtx}}, Func: helperGetFuncArgCnt},
	{Proto: Proto{Name: "bpf_copy_from_user", Args: [5]ArgType{ArgUninitMem, ArgConstSizeOrZero, ArgAnything}, MightSleep: true}, Func: helperCopyFromUser},
	{Proto: Proto{Name: "bpf_copy_from_user_task", Args: [5]ArgType{ArgUninitMem, ArgConstSizeOrZero, ArgAnything, ArgBTFID, ArgAnything},
		ArgBTF: [5]string{3: "task_struct"}, MightSleep: true}, Func: helperCopyFromUserTask},
	// The same address, typed: a trusted task_struct the program reads
	// with probe loads (the world's address reads 0 where the run's
	// memory does not hold it).
	{Proto: Proto{Name: "bpf_get_current_task_btf", Ret: RetBTFIDTrusted, RetBTF: "task_struct"}, Func: helperGetCurrentTask},
	{Proto: Proto{Name: "bpf_get_func_ip", Args: [5]ArgType{ArgCtx}}, Func: helperGetFuncIPKprobe, Variant: "kprobe"},
	{Proto: Proto{Name: "bpf_get_attach_cookie", Args: [5]ArgType{ArgCtx}}, Func: helperGetAttachCookie},
	// The trampolines' and BTF tracepoints' (bpf_get_attach_cookie_tracing)
	// and LSM programs' own: the same cookie of the run's world.
	{Proto: Proto{Name: "bpf_get_attach_cookie", Args: [5]ArgType{ArgCtx}}, Func: helperGetAttachCookie, Variant: "tracing"},
	{Proto: Proto{Name: "bpf_get_attach_cookie", Args: [5]ArgType{ArgCtx}}, Func: helperGetAttachCookie, Variant: "lsm"},
	{Proto: Proto{Name: "bpf_perf_prog_read_value", Args: [5]ArgType{ArgCtx, ArgUninitMem, ArgConstSize}}, Func: helperPerfProgReadValue},
	{Proto: Proto{Name: "bpf_read_branch_records", Args: [5]ArgType{ArgCtx, ArgMemOrNull, ArgConstSizeOrZero, ArgAnything}}, Func: helperReadBranchRecords},
	{Proto: Proto{Name: "bpf_send_signal", Args: [5]ArgType{ArgAnything}}, Func: sendSignalHelper(false)},
	{Proto: Proto{Name: "bpf_send_signal_thread", Args: [5]ArgType{ArgAnything}}, Func: sendSignalHelper(true)},
}

// x86-64's address space, as the kernel's probe reads check it: user
// addresses are below TASK_SIZE_MAX, kernel ones from a page above it,
// canonical (48-bit virtual addresses).
const (
	taskSizeMax = 1<<47 - 4096
	pageSize    = 4096
)

// kernelAddress is x86-64's copy_from_kernel_nofault_allowed: kernel
// reads of user or non-canonical addresses fail with -ERANGE.
func kernelAddress(addr uint64) bool {
	return addr >= taskSizeMax+pageSize && int64(addr)<<16>>16 == int64(addr)
}

// probeReadProto is the prototype of the probe reads: (dst, size,
// unsafe_ptr), dst filled or zeroed.
func probeReadProto(name string) Proto {
	return Proto{Name: name, Args: [5]ArgType{ArgUninitMem, ArgConstSizeOrZero, ArgAnything}}
}

// ownMemory returns the n bytes at addr if they are all memory the run
// may read (its stack, context, maps), or nil: bpfvm's memory, which the
// probe reads read as the kernel's (the program's stack and maps are
// kernel memory there).
func ownMemory(e *vm.Env, addr, n uint64) []byte {
	if n > 0 && addr >= e.Ctx.Start && addr < e.Ctx.End && n <= e.Ctx.End-addr {
		return vm.Slice(addr, n)
	}
	return probeRead(e, addr, n)
}

// ownSpan is readableSpan with the context, for string reads.
func ownSpan(e *vm.Env, addr uint64) uint64 {
	if addr >= e.Ctx.Start && addr < e.Ctx.End {
		return e.Ctx.End - addr
	}
	return readableSpan(e, addr)
}

// probeKernel is copy_from_kernel_nofault into dst: 0, -ERANGE for an
// address that is not the kernel's, -EFAULT for one the world does not
// map.
func probeKernel(e *vm.Env, dst []byte, addr uint64) uint64 {
	if b := ownMemory(e, addr, uint64(len(dst))); b != nil || len(dst) == 0 && ownSpan(e, addr) > 0 {
		copy(dst, b)
		return 0
	}
	if !kernelAddress(addr) {
		return neg(erange)
	}
	if len(dst) == 0 {
		return 0
	}
	b, ok := runner.Of(e).Trace().Read(addr, uint64(len(dst)), false)
	if !ok {
		return neg(efault)
	}
	copy(dst, b)
	return 0
}

// probeUser is copy_from_user_nofault into dst: 0, or -EFAULT for an
// address outside the user's address space or not mapped in the world's
// user memory.
func probeUser(e *vm.Env, dst []byte, addr uint64) uint64 {
	n := uint64(len(dst))
	if addr > taskSizeMax || n > taskSizeMax-addr {
		return neg(efault)
	}
	if n == 0 {
		return 0
	}
	b, ok := runner.Of(e).Trace().Read(addr, n, true)
	if !ok {
		return neg(efault)
	}
	copy(dst, b)
	return 0
}

// probeCompat is bpf_probe_read's read (x86-64's non-overlapping address
// spaces): user memory below TASK_SIZE, kernel memory above, bpfvm's own
// memory (the kernel's, wherever the host maps it) first.
func probeCompat(e *vm.Env, dst []byte, addr uint64) uint64 {
	if ownMemory(e, addr, uint64(len(dst))) == nil && addr < taskSizeMax {
		return probeUser(e, dst, addr)
	}
	return probeKernel(e, dst, addr)
}

// probeReadHelper is a probe read helper (dst, size, unsafe_ptr): the
// read's result, dst zeroed when it fails, as the kernel's.
func probeReadHelper(read func(e *vm.Env, dst []byte, addr uint64) uint64) vm.Helper {
	return func(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
		size := uint32(r2)
		if _, err := memArg(e, r1, size, true); err != nil {
			return 0, err
		}
		dst := vm.Slice(r1, uint64(size))
		ret := read(e, dst, r3)
		if ret != 0 {
			clear(dst)
		}
		return ret, nil
	}
}

// probeString copies the NUL-terminated string at addr into dst as the
// kernel's strncpy_from_{kernel,user}_nofault: at most len(dst)-1 bytes
// and a NUL; it returns the bytes written with the NUL, or -EFAULT (or
// -ERANGE for a kernel read of an address that is not the kernel's).
func probeStr(e *vm.Env, dst []byte, addr uint64, user bool) uint64 {
	if len(dst) == 0 {
		return 0
	}
	var span []byte
	switch {
	case !user && ownSpan(e, addr) > 0:
		span = vm.Slice(addr, ownSpan(e, addr))
	case user && (addr >= taskSizeMax):
		return neg(efault)
	case !user && !kernelAddress(addr):
		return neg(erange)
	default:
		span = runner.Of(e).Trace().ReadSpan(addr, user)
	}
	limit := min(len(span), len(dst)-1)
	for i, c := range span[:limit] {
		if c == 0 {
			copy(dst, span[:i+1])
			return uint64(i + 1)
		}
	}
	if limit < len(dst)-1 {
		// The memory ends before the string or the buffer does.
		return neg(efault)
	}
	copy(dst, span[:limit])
	dst[limit] = 0
	return uint64(len(dst))
}

// probeReadStrHelper is bpf_probe_read_kernel_str or, with user,
// bpf_probe_read_user_str: dst zeroed when the read fails.
func probeReadStrHelper(user bool) vm.Helper {
	return func(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
		size := uint32(r2)
		if _, err := memArg(e, r1, size, true); err != nil {
			return 0, err
		}
		dst := vm.Slice(r1, uint64(size))
		ret := probeStr(e, dst, r3, user)
		if int64(ret) < 0 {
			clear(dst)
		}
		return ret, nil
	}
}

// probeReadStrCompat is bpf_probe_read_str: a user string below
// TASK_SIZE, a kernel one above, bpfvm's own memory first.
func probeReadStrCompat(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	user := ownSpan(e, r3) == 0 && r3 < taskSizeMax
	return probeReadStrHelper(user)(e, r1, r2, r3, r4, r5)
}

// helperGetCurrentTask is bpf_get_current_task: the address of the
// current task's struct task_struct in the world (Trace.TaskStruct).
func helperGetCurrentTask(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return runner.Of(e).Trace().TaskStruct, nil
}

// helperGetFuncIPKprobe is a kprobe's bpf_get_func_ip: the probed
// function's address (Trace.FuncIP; 0 off a function's entry).
func helperGetFuncIPKprobe(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return runner.Of(e).Trace().FuncIP, nil
}

// helperGetAttachCookie is bpf_get_attach_cookie of kprobes, tracepoints,
// raw tracepoints and perf events: the attachment's cookie.
func helperGetAttachCookie(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return runner.Of(e).Trace().Cookie, nil
}

// perfValueSize is the size of struct bpf_perf_event_value.
const perfValueSize = 24

// helperPerfProgReadValue is bpf_perf_prog_read_value(ctx, buf, size): the
// event's counter, enabled and running times (Trace.Counter); -EINVAL and
// buf zeroed for a size other than struct bpf_perf_event_value's.
func helperPerfProgReadValue(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	size := uint32(r3)
	if _, err := memArg(e, r2, size, true); err != nil {
		return 0, err
	}
	buf := vm.Slice(r2, uint64(size))
	if size != perfValueSize {
		clear(buf)
		return neg(einval), nil
	}
	c := runner.Of(e).Trace().Counter
	binary.LittleEndian.PutUint64(buf, c.Counter)
	binary.LittleEndian.PutUint64(buf[8:], c.Enabled)
	binary.LittleEndian.PutUint64(buf[16:], c.Running)
	return 0, nil
}

// branchRecordsSize is BPF_F_GET_BRANCH_RECORDS_SIZE.
const branchRecordsSize = 1

// helperReadBranchRecords is bpf_read_branch_records(ctx, buf, size,
// flags): bpfvm's samples have no branch stack, so -ENOENT, or -EINVAL
// for unknown flags.
func helperReadBranchRecords(_ *vm.Env, _, _, _, r4, _ uint64) (uint64, error) {
	if r4&^branchRecordsSize != 0 {
		return neg(einval), nil
	}
	return neg(enoent), nil
}

// maxSignal is the kernel's _NSIG, the largest valid signal.
const maxSignal = 64

// sendSignalHelper is bpf_send_signal(sig) or, with thread,
// bpf_send_signal_thread(sig): the signal is recorded in the run's result
// (Result.Signals), not sent; -EINVAL for an invalid signal, -EPERM for
// init (tgid 1), as the kernel refuses. Signal 0, which delivers nothing,
// is not recorded.
func sendSignalHelper(thread bool) vm.Helper {
	return func(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
		r := runner.Of(e)
		if t, _ := r.Task(); t.TGID == 1 {
			return neg(eperm), nil
		}
		sig := uint32(r1)
		if sig > maxSignal {
			return neg(einval), nil
		}
		if sig != 0 {
			r.SendSignal(runner.Signal{Sig: sig, Thread: thread})
		}
		return 0, nil
	}
}

// helperCopyFromUser is bpf_copy_from_user(dst, size, user_ptr): the
// current task's user memory (the world's), 0, or -EFAULT with dst zeroed.
func helperCopyFromUser(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	size := uint32(r2)
	if _, err := memArg(e, r1, size, true); err != nil {
		return 0, err
	}
	dst := vm.Slice(r1, uint64(size))
	ret := probeUser(e, dst, r3)
	if ret != 0 {
		clear(dst)
	}
	return ret, nil
}

// helperCopyFromUserTask is bpf_copy_from_user_task(dst, size, user_ptr,
// task, flags): bpf_copy_from_user of the task's memory; the world has one
// user address space, the current task's, which every task reads. Flags
// other than 0 are -EINVAL, dst left as it is.
func helperCopyFromUserTask(e *vm.Env, r1, r2, r3, _, r5 uint64) (uint64, error) {
	if r5 != 0 {
		return neg(einval), nil
	}
	return helperCopyFromUser(e, r1, r2, r3, 0, 0)
}

// helperGetFuncArg is bpf_get_func_arg(ctx, n, value): the n-th u64
// argument slot, or -EINVAL (value zeroed) past the function's.
func helperGetFuncArg(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	if _, err := memArg(e, r3, 8, true); err != nil {
		return 0, err
	}
	out := vm.Slice(r3, 8)
	if r2 >= uint64(runner.Of(e).Program().FuncArgs) {
		clear(out)
		return neg(einval), nil
	}
	if _, err := memArg(e, r1+8*r2, 8, false); err != nil {
		return 0, err
	}
	copy(out, vm.Slice(r1+8*r2, 8))
	return 0, nil
}

// helperGetFuncRet is bpf_get_func_ret(ctx, value): the return value
// slot of fexit and fmod_ret programs, -EOPNOTSUPP for the others (value
// left as it is, as the kernel's fixup leaves it).
func helperGetFuncRet(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	p := runner.Of(e).Program()
	if !p.FuncRet {
		return neg(eopnotsupp), nil
	}
	if _, err := memArg(e, r2, 8, true); err != nil {
		return 0, err
	}
	at := r1 + 8*uint64(p.FuncArgs)
	if _, err := memArg(e, at, 8, false); err != nil {
		return 0, err
	}
	copy(vm.Slice(r2, 8), vm.Slice(at, 8))
	return 0, nil
}

// helperGetFuncArgCnt is bpf_get_func_arg_cnt(ctx): the function's
// argument slots.
func helperGetFuncArgCnt(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return uint64(runner.Of(e).Program().FuncArgs), nil
}
