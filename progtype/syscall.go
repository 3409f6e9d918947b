package progtype

// SyscallContextMax is the largest context a syscall program's test run
// takes (U16_MAX bytes), and every context access must start below it.
const SyscallContextMax = 1<<16 - 1

// Syscall is BPF_PROG_TYPE_SYSCALL (the "syscall" section,
// kernel/bpf/syscall.c): a program user space runs with BPF_PROG_TEST_RUN
// to issue bpf() commands from BPF (bpf_sys_bpf, bpf_sys_close,
// bpf_btf_find_by_name_kind, bpf_kallsyms_lookup_name), loaded sleepable
// (libbpf's and cilium/ebpf's "syscall" sections set BPF_F_SLEEPABLE). The
// context is a buffer of the caller's: any load or store aligned to its
// size that starts below U16_MAX (syscall_prog_is_valid_access), which
// the kernel does not convert. The test run (bpf_prog_test_run_syscall)
// takes the buffer from the context input, at least the bytes the program
// reaches of it (max_ctx_offset) and at most U16_MAX, no packet, no
// repetitions and no flags, and copies the buffer back to the input after
// the run: RunOptions.ContextOut receives it, as cilium/ebpf gives it, and
// must then be as long as the input.
var Syscall = &Type{
	Name:        "syscall",
	ContextSize: SyscallContextMax + 1,
	Fields: []Field{{Name: "ctx", Offset: 0, Size: SyscallContextMax + 1, Read: true, Write: true,
		Memory: true, StartLimit: SyscallContextMax}},
	Helpers:   syscallHelpers,
	Sleepable: true,
	Trace:     &TraceRun{Kernel: true, WriteBack: true, MaxInput: SyscallContextMax},
}
