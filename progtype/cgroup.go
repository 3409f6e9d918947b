package progtype

import "github.com/cilium/ebpf"

// The cgroup types of kernel/bpf/cgroup.c. The kernel has no test run for
// them; bpfvm's runs take the context's scalar fields from the context
// input and return the writable ones in the context output.

// cgroupSysctl returns BPF_PROG_TYPE_CGROUP_SYSCTL with struct bpf_sysctl
// (sysctl_is_valid_access): write read-only, file_pos written whole, both
// read narrow. Programs return 0 or 1. The type takes any attach type;
// the helper set depends on it (hasRetval).
func cgroupSysctl(a ebpf.AttachType) *Type {
	return &Type{
		Name:        "cgroup_sysctl",
		ContextSize: 8,
		Fields: []Field{
			{Name: "write", Offset: 0, Size: 4, Read: true, Narrow: true, Input: true},
			{Name: "file_pos", Offset: 4, Size: 4, Read: true, Write: true, Narrow: true, Input: true, Output: true},
		},
		ContextNames: []string{"bpf_sysctl", "bpf_sysctl_kern"},
		Helpers: Helpers(cgroupCommon(a), cgroupCurrentHelpers,
			names(CapNone, `sysctl_get_name sysctl_get_current_value sysctl_get_new_value
			sysctl_set_new_value ktime_get_coarse_ns perf_event_output`), baseHelpers),
		Attach:      a,
		CheckReturn: true,
		ReturnMax:   1,
	}
}

// CGroupSysctl is BPF_PROG_TYPE_CGROUP_SYSCTL of its attach type
// (BPF_CGROUP_SYSCTL).
var CGroupSysctl = cgroupSysctl(ebpf.AttachCGroupSysctl)

// cgroupSysctlNoRetval is cgroup_sysctl for the attach types without the
// syscall's return value, 0 among them.
var cgroupSysctlNoRetval = cgroupSysctl(0)

// cgroupDevice returns BPF_PROG_TYPE_CGROUP_DEVICE with struct
// bpf_cgroup_dev_ctx (cgroup_dev_is_valid_access): read-only, access_type
// read narrow. Programs return 0 or 1. The type takes any attach type;
// the helper set depends on it (hasRetval).
func cgroupDevice(a ebpf.AttachType) *Type {
	return &Type{
		Name:        "cgroup_device",
		ContextSize: 12,
		Fields: []Field{
			{Name: "access_type", Offset: 0, Size: 4, Read: true, Narrow: true, Input: true},
			{Name: "major", Offset: 4, Size: 4, Read: true, Input: true},
			{Name: "minor", Offset: 8, Size: 4, Read: true, Input: true},
		},
		ContextNames: []string{"bpf_cgroup_dev_ctx"},
		Helpers: Helpers(cgroupCommon(a), cgroupCurrentHelpers,
			names(CapNone, "perf_event_output"), baseHelpers),
		Attach:      a,
		CheckReturn: true,
		ReturnMax:   1,
	}
}

// CGroupDevice is BPF_PROG_TYPE_CGROUP_DEVICE of its attach type
// (BPF_CGROUP_DEVICE).
var CGroupDevice = cgroupDevice(ebpf.AttachCGroupDevice)

// cgroupDeviceNoRetval is cgroup_device for the attach types without the
// syscall's return value, 0 among them.
var cgroupDeviceNoRetval = cgroupDevice(0)

// cgroupSockopt returns BPF_PROG_TYPE_CGROUP_SOCKOPT for attach type a,
// with struct bpf_sockopt (cg_sockopt_is_valid_access): optval and
// optval_end are 64-bit pointers to the option's buffer, which the
// verifier treats as packet; level and optname writable by setsockopt
// programs, retval readable and writable by getsockopt ones, optlen by
// both, all whole. The sk field, a struct bpf_sock pointer, is not
// modelled: never readable here. Programs return 0 or 1. bpfvm's runs
// give the program the input as the option's buffer.
func cgroupSockopt(a ebpf.AttachType) *Type {
	set, get := a == ebpf.AttachCGroupSetsockopt, a == ebpf.AttachCGroupGetsockopt
	s := names(CapNone, "get_netns_cookie sk_storage_get sk_storage_delete tcp_sock perf_event_output")
	if set {
		s = Helpers(s, names(CapNone, "setsockopt getsockopt"))
	}
	return &Type{
		Name:        "cgroup_sockopt",
		ContextSize: 40,
		Fields: []Field{
			{Name: "sk", Offset: 0, Size: 8},
			{Name: "optval", Offset: 8, Size: 8, Read: true, Kind: PacketData},
			{Name: "optval_end", Offset: 16, Size: 8, Read: true, Kind: PacketEnd},
			{Name: "level", Offset: 24, Size: 4, Read: true, Write: set, Input: true, Output: set},
			{Name: "optname", Offset: 28, Size: 4, Read: true, Write: set, Input: true, Output: set},
			{Name: "optlen", Offset: 32, Size: 4, Read: true, Write: true, Input: true, Output: true},
			{Name: "retval", Offset: 36, Size: 4, Read: get, Write: get, Input: true, Output: get},
		},
		ContextNames: []string{"bpf_sockopt", "bpf_sockopt_kern"},
		Helpers:      Helpers(cgroupCommon(a), cgroupCurrentHelpers, s, baseHelpers),
		Attach:       a,
		CheckReturn:  true,
		ReturnMax:    1,
	}
}

// CGroupSetsockopt and CGroupGetsockopt are BPF_PROG_TYPE_CGROUP_SOCKOPT
// for their attach types.
var (
	CGroupSetsockopt = cgroupSockopt(ebpf.AttachCGroupSetsockopt)
	CGroupGetsockopt = cgroupSockopt(ebpf.AttachCGroupGetsockopt)
)
