package progtype

import "github.com/cilium/ebpf"

// The helper sets of the tracing program types (kernel/trace/bpf_trace.c,
// kernel/bpf/bpf_lsm.c, kernel/bpf/syscall.c). Every tracing type needs
// CAP_PERFMON to load at all (the kernel's is_perfmon_prog_type), so the
// sets name their helpers without a privilege of their own: the load's is
// the one that counts. A type's set is its func_proto's own cases, then
// the sets it falls through to, as the kernel's switch statements do: a
// case returning NULL (bpf_seq_printf outside iterators) leaves the helper
// out rather than falling through.

// tracingBaseHelpers is bpf_tracing_func_proto, the base of every tracing
// type: maps, the current task, probing kernel and user memory, signals,
// stacks, then bpf_base_func_proto. It assumes the kernel's x86 build
// (CONFIG_ARCH_HAS_NON_OVERLAPPING_ADDRESS_SPACE gives the legacy
// bpf_probe_read and bpf_probe_read_str), CONFIG_CGROUPS, and lockdown
// for integrity, under which the kernel refuses bpf_probe_write_user
// (bpfvm gives programs no way to write the host's memory either).
var tracingBaseHelpers = Helpers(
	names(CapNone, `map_lookup_elem map_update_elem map_delete_elem
		map_push_elem map_pop_elem map_peek_elem map_lookup_percpu_elem
		ktime_get_ns ktime_get_boot_ns tail_call
		get_current_pid_tgid get_current_task get_current_task_btf task_pt_regs
		get_current_uid_gid get_current_comm trace_printk
		get_smp_processor_id get_numa_node_id perf_event_read
		current_task_under_cgroup get_prandom_u32
		probe_read_user probe_read_kernel probe_read_user_str probe_read_kernel_str
		probe_read probe_read_str
		get_current_cgroup_id get_current_ancestor_cgroup_id
		cgrp_storage_get cgrp_storage_delete
		send_signal send_signal_thread perf_event_read_value get_ns_current_pid_tgid
		ringbuf_output ringbuf_reserve ringbuf_submit ringbuf_discard ringbuf_query
		jiffies64 get_task_stack copy_from_user copy_from_user_task snprintf_btf
		per_cpu_ptr this_cpu_ptr task_storage_get task_storage_delete
		for_each_map_elem snprintf get_func_ip@tracing get_branch_snapshot
		find_vma trace_vprintk`),
	baseHelpers,
)

// kprobeHelpers is kprobe_prog_func_proto (kprobe, kretprobe, uprobe,
// uretprobe, usdt): perf output and stacks from the probed registers, the
// probed function's address and the attach cookie. The kernel's
// bpf_override_return is there only with CONFIG_BPF_KPROBE_OVERRIDE, which
// the kernels bpfvm compares with are built without.
var kprobeHelpers = Helpers(
	names(CapNone, "perf_event_output get_stackid get_stack get_func_ip@kprobe get_attach_cookie"),
	tracingBaseHelpers,
)

// tracepointHelpers is tp_prog_func_proto: the kprobe helpers that take
// the registers from the tracepoint's record, the attach cookie.
var tracepointHelpers = Helpers(
	names(CapNone, "perf_event_output get_stackid get_stack get_attach_cookie"),
	tracingBaseHelpers,
)

// rawTracepointHelpers is raw_tp_prog_func_proto (raw_tracepoint and
// raw_tracepoint_writable): perf output and stacks from the caller's
// registers, the attach cookie. Its bpf_get_stack takes an initialised buffer
// (ARG_PTR_TO_MEM | MEM_RDONLY), the variant "raw_tp".
var rawTracepointHelpers = Helpers(
	names(CapNone, "perf_event_output get_stackid get_stack@raw_tp get_attach_cookie"),
	tracingBaseHelpers,
)

// perfEventHelpers is pe_prog_func_proto: stacks of the sample, the
// counter's value, branch records and the event's cookie.
var perfEventHelpers = Helpers(
	names(CapNone, `perf_event_output get_stackid get_stack perf_prog_read_value
		read_branch_records get_attach_cookie`),
	tracingBaseHelpers,
)

// hasTrampoline is the kernel's bpf_prog_has_trampoline for a tracing
// program of attach type a: fentry, fexit and fmod_ret.
func hasTrampoline(a ebpf.AttachType) bool {
	return a == ebpf.AttachTraceFEntry || a == ebpf.AttachTraceFExit || a == ebpf.AttachModifyReturn
}

// tracingHelpers is tracing_prog_func_proto (BPF_PROG_TYPE_TRACING) for
// attach type a, with trampoline saying whether the program has one (the
// kernel's bpf_prog_has_trampoline: fentry, fexit, fmod_ret, and LSM
// programs of BPF_LSM_MAC, which reach it from bpf_lsm_func_proto): the
// networking helpers that take BTF pointers, the iterators' seq_file
// output, the traced function's arguments, then raw_tp_prog_func_proto.
// Iterators' targets with a func_proto of their own (bpf_iter_tcp's
// setsockopt) add helpers this set leaves out.
func tracingHelpers(a ebpf.AttachType, trampoline bool) HelperSet {
	sets := []HelperSet{names(CapNone, `skb_output xdp_output
		skc_to_tcp6_sock skc_to_tcp_sock skc_to_tcp_timewait_sock
		skc_to_tcp_request_sock skc_to_udp6_sock skc_to_unix_sock skc_to_mptcp_sock
		sk_storage_get@tracing sk_storage_delete@tracing sock_from_file
		get_socket_cookie@ptr xdp_get_buff_len@trace d_path`)}
	if a == ebpf.AttachTraceIter {
		sets = append(sets, names(CapNone, "seq_printf seq_write seq_printf_btf"))
	}
	if trampoline {
		sets = append(sets, names(CapNone, "get_func_arg get_func_ret get_func_arg_cnt"))
	}
	s := Helpers(append(sets, rawTracepointHelpers)...)
	// The cookie is the trampoline's or the BTF tracepoint's; the others
	// (iterators) have none.
	delete(s, "bpf_get_attach_cookie")
	if trampoline || a == ebpf.AttachTraceRawTp {
		s["bpf_get_attach_cookie"] = HelperRule{Variant: "tracing"}
	}
	return s
}

// lsmHelpers is bpf_lsm_func_proto for attach type a (BPF_LSM_MAC or
// BPF_LSM_CGROUP) at the LSM hook named hook (without its "bpf_lsm_"
// prefix), sleepable or not: local storage of inodes and sockets, spin
// locks, exec options, IMA hashes (sleepable programs), the cookie (with
// a trampoline), and for cgroup LSM programs the cgroup storage, the
// return value and, at hooks where the socket is locked or still being
// set up, socket options; then tracing_prog_func_proto.
func lsmHelpers(a ebpf.AttachType, hook string, sleepable bool) HelperSet {
	sets := []HelperSet{names(CapNone, `inode_storage_get inode_storage_delete
		sk_storage_get sk_storage_delete spin_lock spin_unlock bprm_opts_set`)}
	if sleepable {
		sets = append(sets, names(CapNone, "ima_inode_hash ima_file_hash"))
	}
	mac := a == ebpf.AttachLSMMac
	if mac {
		sets = append(sets, names(CapNone, "get_attach_cookie@lsm"))
	}
	if a == ebpf.AttachLSMCgroup {
		sets = append(sets, names(CapNone, "get_local_storage set_retval get_retval"))
		switch hook {
		case "socket_sock_rcv_skb", "sock_graft", "inet_csk_clone", "inet_conn_established":
			sets = append(sets, names(CapNone, "setsockopt@sk getsockopt@sk"))
		case "socket_post_create", "socket_socketpair":
			sets = append(sets, names(CapNone, "setsockopt@unlocked getsockopt@unlocked"))
		}
	}
	return Helpers(append(sets, tracingHelpers(a, mac))...)
}

// syscallHelpers is syscall_prog_func_proto (BPF_PROG_TYPE_SYSCALL, whose
// programs are all sleepable and load with expected attach type 0): the
// bpf() and close() syscalls, BTF and symbol lookups, then
// tracing_prog_func_proto.
var syscallHelpers = Helpers(
	names(CapPerfmon, "sys_bpf"),
	names(CapNone, "btf_find_by_name_kind sys_close kallsyms_lookup_name"),
	tracingHelpers(0, false),
)
