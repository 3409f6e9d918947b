package progtype

import (
	"math"
	"strings"

	"github.com/cilium/ebpf"
)

// LSM programs (BPF_PROG_TYPE_LSM, kernel/bpf/bpf_lsm.c) attach to an LSM
// hook: their context is the arguments of the hook's bpf_lsm_<hook>
// function, typed by its BTF prototype as fentry's are, and after them
// the return value of the programs before. ProgramSpec.AttachTo names the
// hook without the prefix ("file_open"), as cilium/ebpf's lsm/ sections
// do. Their helper set depends on the hook (TargetHelpers), their return
// value on the hook's return type (LSMReturn).
var (
	// LSMMac is lsm (BPF_LSM_MAC), the program running at the hook
	// through a trampoline. Sleepable programs (lsm.s/) attach to the
	// hooks the kernel lists as sleepable.
	LSMMac = lsmType("lsm", ebpf.AttachLSMMac)
	// LSMCgroup is lsm_cgroup (BPF_LSM_CGROUP), run for the cgroup of
	// the hook's socket or of the current task.
	LSMCgroup = lsmType("lsm_cgroup", ebpf.AttachLSMCgroup)
)

func lsmType(name string, a ebpf.AttachType) *Type {
	return &Type{
		Name:        name,
		ContextSize: 8 * MaxTracingArgs,
		Attach:      a,
		BTFArgs:     true,
		Helpers:     lsmHelpers(a, "", false),
		TargetHelpers: func(hook string, sleepable bool) HelperSet {
			return lsmHelpers(a, hook, sleepable)
		},
		Sleepable: a == ebpf.AttachLSMMac,
	}
}

// lsmTypes are the LSM types by attach type.
var lsmTypes = map[ebpf.AttachType]*Type{
	ebpf.AttachLSMMac:    LSMMac,
	ebpf.AttachLSMCgroup: LSMCgroup,
}

// LSMHookPrefix prefixes an LSM hook's name to give the function the
// kernel defines for BPF programs to attach to.
const LSMHookPrefix = "bpf_lsm_"

// lsmDisabledHooks are the hooks the kernel refuses LSM programs at
// (bpf_lsm_disabled_hooks): their return values are not errors a
// program could give.
var lsmDisabledHooks = hookSet(`vm_enough_memory inode_need_killpriv inode_getsecurity
	inode_listsecurity inode_copy_up_xattr getselfattr getprocattr setprocattr
	key_getsecurity audit_rule_match ismaclabel`)

// lsmSleepableHooks are the hooks sleepable programs may attach to
// (sleepable_lsm_hooks: called where the kernel may sleep).
var lsmSleepableHooks = hookSet(`bpf bpf_map bpf_map_create bpf_map_free bpf_prog
	bpf_prog_load bpf_prog_free bpf_token_create bpf_token_free bpf_token_cmd
	bpf_token_capable bprm_check_security bprm_committed_creds bprm_committing_creds
	bprm_creds_for_exec bprm_creds_from_file capget capset cred_prepare file_ioctl
	file_lock file_open file_post_open file_receive inode_create inode_free_security
	inode_getattr inode_getxattr inode_mknod inode_need_killpriv inode_post_setxattr
	inode_readlink inode_rename inode_rmdir inode_setattr inode_setxattr inode_symlink
	inode_unlink kernel_module_request kernel_read_file kernfs_init_security
	path_unlink path_mkdir path_rmdir path_truncate path_symlink path_link path_rename
	path_chmod path_chown mmap_file netlink_send path_notify release_secctx
	sb_alloc_security sb_eat_lsm_opts sb_kern_mount sb_mount sb_remount sb_set_mnt_opts
	sb_show_options sb_statfs sb_umount settime inet_conn_established socket_accept
	socket_bind socket_connect socket_create socket_getpeername socket_getpeersec_dgram
	socket_getsockname socket_getsockopt socket_listen socket_post_create socket_recvmsg
	socket_sendmsg socket_shutdown socket_socketpair syslog task_alloc
	current_getsecid_subj task_getsecid_obj task_prctl task_setscheduler task_to_inode
	userns_create`)

// lsmUntrustedHooks are the hooks whose pointer arguments are not trusted
// (untrusted_lsm_hooks: objects being freed or not yet set up).
var lsmUntrustedHooks = hookSet(`bpf_map_free bpf_prog_free file_alloc_security
	file_free_security sk_alloc_security sk_free_security task_free`)

// lsmBoolHooks are the hooks returning 0 or 1 rather than 0 or an error
// (bool_lsm_hooks).
var lsmBoolHooks = hookSet("xfrm_state_pol_flow_match audit_rule_known inode_xattr_skipcap")

func hookSet(names string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		m[n] = true
	}
	return m
}

// LSMHookDisabled reports whether the kernel refuses LSM programs at hook.
func LSMHookDisabled(hook string) bool { return lsmDisabledHooks[hook] }

// LSMHookSleepable reports whether sleepable LSM programs may attach to
// hook.
func LSMHookSleepable(hook string) bool { return lsmSleepableHooks[hook] }

// LSMHookTrusted reports whether the pointer arguments of hook are trusted
// (the kernel's bpf_lsm_is_trusted).
func LSMHookTrusted(hook string) bool { return !lsmUntrustedHooks[hook] }

// LSMReturn is the range of values an LSM program of attach type a at
// hook may return, the kernel's check_return_code with
// bpf_lsm_get_retval_range, and whether only the low 32 bits are
// checked. void says the hook returns nothing. ok is false where any
// value goes: lsm programs at void hooks.
func LSMReturn(a ebpf.AttachType, hook string, void bool) (lo, hi int64, bits32, ok bool) {
	if a == ebpf.AttachLSMCgroup {
		// The cgroup programs' verdict: 1 allows, 0 refuses (with the
		// error set_retval gave); at void hooks there is nothing to
		// refuse.
		if void {
			return 1, 1, false, true
		}
		return 0, 1, false, true
	}
	lo, hi, ok = LSMRetval(hook, void)
	return lo, hi, true, ok
}

// LSMRetval is the range of the return value of an lsm program at hook
// (bpf_lsm_get_retval_range), which is also what loading the return value
// from the context gives: 0 or 1 for the boolean hooks, 0 or a negative
// errno (-MAX_ERRNO) for the others. ok is false for void hooks.
func LSMRetval(hook string, void bool) (lo, hi int64, ok bool) {
	switch {
	case void:
		return math.MinInt32, math.MaxInt32, false
	case lsmBoolHooks[hook]:
		return 0, 1, true
	}
	return -maxErrno, 0, true
}

// maxErrno is the kernel's MAX_ERRNO.
const maxErrno = 4095
