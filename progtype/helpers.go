package progtype

import (
	"maps"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
)

// Cap is the privilege a program is loaded with, as the kernel's func_proto
// functions test it (bpf_token_capable). The levels are nested, as the
// kernel's tests are: CAP_PERFMON helpers are reached only past the CAP_BPF
// test.
type Cap uint8

// Privilege levels.
const (
	// CapNone is a load without CAP_BPF (or CAP_SYS_ADMIN): unprivileged.
	CapNone Cap = iota
	// CapBPF is CAP_BPF without CAP_PERFMON.
	CapBPF
	// CapPerfmon is CAP_BPF and CAP_PERFMON (root).
	CapPerfmon
)

// HelperSet is the helpers a program type may call, by kernel name
// ("bpf_map_lookup_elem"), each with the least privilege a load needs to
// call it and the variant it gets: a kernel func_proto function as data. A
// helper outside the set is the kernel's "program of this type cannot use
// helper"; a helper in it that bpfvm does not implement is a load error of
// its own.
type HelperSet map[string]HelperRule

// HelperRule is what a program type's func_proto says of one helper.
type HelperRule struct {
	// Cap is the least privilege a load needs to call the helper.
	Cap Cap
	// Variant names the kernel's bpf_func_proto the type gets when the
	// kernel has several for one helper id ("" for the main one;
	// "curr" for bpf_get_cgroup_classid_curr_proto): package helper
	// has an entry per variant (helper.Helper.Variant).
	Variant string
	// Refuse is how the kernel's verifier refuses calls the func_proto
	// lets through, after "func <name>#<id> " (bpf_get_func_ip outside
	// kprobes and trampolines: "not supported for program type 5"); ""
	// for none.
	Refuse string
}

// Helpers composes sets as a func_proto function falls through to the
// next one (xdp_func_proto to bpf_sk_base_func_proto to
// bpf_base_func_proto): a helper takes the privilege of the first set that
// names it.
func Helpers(sets ...HelperSet) HelperSet {
	out := HelperSet{}
	for _, s := range sets {
		for name, c := range s {
			if _, ok := out[name]; !ok {
				out[name] = c
			}
		}
	}
	return out
}

// BaseHelpers returns the kernel's bpf_base_func_proto (kernel/bpf/helpers.c),
// the helpers every program type with a func_proto falls back to, for host
// types to compose their own sets from.
func BaseHelpers() HelperSet { return maps.Clone(baseHelpers) }

// names gives the helpers named (without their "bpf_" prefix, separated by
// spaces, "@variant" after a name for a variant's proto) the privilege c:
// the type-specific cases of a func_proto switch return before any
// capability test, so they need none.
func names(c Cap, list string) HelperSet {
	s := HelperSet{}
	for _, n := range strings.Fields(list) {
		name, variant, _ := strings.Cut(n, "@")
		s["bpf_"+name] = HelperRule{Cap: c, Variant: variant}
	}
	return s
}

// baseHelpers is bpf_base_func_proto: the first switch for every load, the
// second for CAP_BPF, the third for CAP_PERFMON as well.
var baseHelpers = Helpers(
	names(CapNone, `map_lookup_elem map_update_elem map_delete_elem
		map_push_elem map_pop_elem map_peek_elem map_lookup_percpu_elem
		get_prandom_u32 get_smp_processor_id get_numa_node_id tail_call
		ktime_get_ns ktime_get_boot_ns ktime_get_tai_ns
		ringbuf_output ringbuf_reserve ringbuf_submit ringbuf_discard ringbuf_query
		strncmp strtol strtoul
		get_current_pid_tgid get_ns_current_pid_tgid get_current_uid_gid`),
	names(CapBPF, `spin_lock spin_unlock jiffies64
		timer_init timer_set_callback timer_start timer_cancel kptr_xchg
		for_each_map_elem loop user_ringbuf_drain
		ringbuf_reserve_dynptr ringbuf_submit_dynptr ringbuf_discard_dynptr
		dynptr_from_mem dynptr_read dynptr_write dynptr_data
		cgrp_storage_get cgrp_storage_delete
		get_current_cgroup_id get_current_ancestor_cgroup_id
		current_task_under_cgroup get_cgroup_classid@curr
		task_storage_get task_storage_delete`),
	names(CapPerfmon, `trace_printk get_current_task get_current_task_btf
		get_current_comm probe_read_user probe_read_kernel
		probe_read_user_str probe_read_kernel_str
		copy_from_user copy_from_user_task snprintf_btf snprintf
		task_pt_regs trace_vprintk perf_event_read_value perf_event_read
		send_signal send_signal_thread get_task_stack get_branch_snapshot
		find_vma per_cpu_ptr this_cpu_ptr`),
)

// sockBaseHelpers is bpf_sk_base_func_proto (net/core/filter.c), which the
// networking types fall back to: the socket casts need CAP_PERFMON, then
// bpf_base_func_proto.
var sockBaseHelpers = Helpers(
	names(CapNone, "ktime_get_coarse_ns"),
	names(CapPerfmon, `skc_to_tcp6_sock skc_to_tcp_sock skc_to_tcp_timewait_sock
		skc_to_tcp_request_sock skc_to_udp6_sock skc_to_unix_sock
		skc_to_mptcp_sock`),
	baseHelpers,
)

// CanCall reports whether a program of the type, loaded with privilege c,
// may call helper id. A type without a set (Helpers nil: Raw, host types
// that give none) may call every helper. Ids without a kernel name are
// the host's own helpers (ProgramOptions.Helpers), which no kernel set
// names: any type may call them.
func (t *Type) CanCall(id int32, c Cap) bool {
	name := isa.HelperName(id)
	if t.Helpers == nil || name == "" {
		return true
	}
	r, ok := t.Helpers[name]
	return ok && r.Cap <= c
}

// HelperRefused returns how the verifier refuses calls of helper id that
// the type's set names (HelperRule.Refuse), or "".
func (t *Type) HelperRefused(id int32) string {
	if t == nil || t.Helpers == nil {
		return ""
	}
	return t.Helpers[isa.HelperName(id)].Refuse
}

// HelperVariant returns the variant of helper id the type's set gives
// (HelperRule.Variant): "" for the main one, and for types without a set.
func (t *Type) HelperVariant(id int32) string {
	if t == nil || t.Helpers == nil {
		return ""
	}
	return t.Helpers[isa.HelperName(id)].Variant
}

// cgroupCommon is cgroup_common_func_proto (kernel/bpf/cgroup.c), which
// the cgroup types ask first: the cgroup storage, and the syscall's return
// value where the hook has one to get or set (not for skb, sock_ops,
// recvmsg, getpeername and getsockname hooks).
func cgroupCommon(a ebpf.AttachType) HelperSet {
	s := names(CapNone, "get_local_storage")
	if !hasRetval(a) {
		return s
	}
	return Helpers(s, names(CapNone, "get_retval set_retval"))
}

// hasRetval reports whether cgroup programs of attach type a may get and
// set the syscall's return value. Attach type 0 is
// BPF_CGROUP_INET_INGRESS: programs of the types that take any attach
// type (cgroup_sysctl, cgroup_device) loaded without one may not.
func hasRetval(a ebpf.AttachType) bool {
	switch a {
	case ebpf.AttachCGroupInetIngress, ebpf.AttachCGroupInetEgress, ebpf.AttachCGroupSockOps,
		ebpf.AttachCGroupUDP4Recvmsg, ebpf.AttachCGroupUDP6Recvmsg, ebpf.AttachCgroupUnixRecvmsg,
		ebpf.AttachCgroupInet4GetPeername, ebpf.AttachCgroupInet6GetPeername, ebpf.AttachCgroupUnixGetpeername,
		ebpf.AttachCgroupInet4GetSockname, ebpf.AttachCgroupInet6GetSockname, ebpf.AttachCgroupUnixGetsockname:
		return false
	}
	return true
}

// cgroupCurrentHelpers is cgroup_current_func_proto, which the cgroup types
// that run in the calling task's context ask next: the task's identity
// without CAP_PERFMON.
var cgroupCurrentHelpers = names(CapNone, `get_current_uid_gid
	get_cgroup_classid current_task_under_cgroup`)
