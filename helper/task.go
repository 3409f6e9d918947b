package helper

import (
	"encoding/binary"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// taskHelpers describe the current task (kernel/bpf/helpers.c).
var taskHelpers = []Helper{
	{Proto: Proto{Name: "bpf_get_current_pid_tgid"}, Func: helperGetCurrentPidTgid},
	{Proto: Proto{Name: "bpf_get_current_uid_gid"}, Func: helperGetCurrentUidGid},
	{Proto: Proto{Name: "bpf_get_current_comm", Args: [5]ArgType{ArgUninitMem, ArgConstSize}}, Func: helperGetCurrentComm},
	{Proto: Proto{Name: "bpf_get_current_cgroup_id"}, Func: helperGetCurrentCgroupID},
	{Proto: Proto{Name: "bpf_get_current_ancestor_cgroup_id", Args: [5]ArgType{ArgAnything}}, Func: helperGetCurrentAncestorCgroupID},
	{Proto: Proto{Name: "bpf_get_ns_current_pid_tgid", Args: [5]ArgType{ArgAnything, ArgAnything, ArgUninitMem, ArgConstSize}}, Func: helperGetNSCurrentPidTgid},
}

// pidnsInfoSize is the size of struct bpf_pidns_info (pid, tgid).
const pidnsInfoSize = 8

// helperGetNSCurrentPidTgid is bpf_get_ns_current_pid_tgid(dev, ino,
// nsdata, size): the current task's pid and tgid in its pid namespace
// when dev and ino name it (the world's Task.PidNSDev and PidNSIno), else
// -EINVAL, as for a size other than struct bpf_pidns_info's or a device
// number wider than the kernel's 32-bit dev_t; nsdata zeroed on error.
func helperGetNSCurrentPidTgid(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	size := uint32(r4)
	if _, err := memArg(e, r3, size, true); err != nil {
		return 0, err
	}
	out := vm.Slice(r3, uint64(size))
	t, host := runner.Of(e).Task()
	if size != pidnsInfoSize || r1 != uint64(uint32(r1)) || t.PidNSIno == 0 || r1 != t.PidNSDev || r2 != t.PidNSIno {
		clear(out)
		return neg(einval), nil
	}
	if host {
		t.PID = threadID()
	}
	pid, tgid := t.NSPID, t.NSTGID
	if pid == 0 {
		pid = t.PID
	}
	if tgid == 0 {
		tgid = t.TGID
	}
	binary.NativeEndian.PutUint32(out[0:], pid)
	binary.NativeEndian.PutUint32(out[4:], tgid)
	return 0, nil
}

// helperGetCurrentAncestorCgroupID is
// bpf_get_current_ancestor_cgroup_id(level): the id of the current task's
// cgroup's ancestor at level (0 the root; its own at its level), 0 for a
// level out of range.
func helperGetCurrentAncestorCgroupID(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	t, _ := runner.Of(e).Task()
	return t.AncestorCgroup(int32(r1)), nil
}

// helperGetCurrentCgroupID is bpf_get_current_cgroup_id: the id of the
// current task's cgroup v2.
func helperGetCurrentCgroupID(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	t, _ := runner.Of(e).Task()
	return t.CgroupID, nil
}

// helperGetCurrentPidTgid is bpf_get_current_pid_tgid: tgid << 32 | pid.
func helperGetCurrentPidTgid(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	t, host := runner.Of(e).Task()
	if host {
		t.PID = threadID()
	}
	return uint64(t.TGID)<<32 | uint64(t.PID), nil
}

// helperGetCurrentUidGid is bpf_get_current_uid_gid: gid << 32 | uid.
func helperGetCurrentUidGid(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	t, _ := runner.Of(e).Task()
	return uint64(t.GID)<<32 | uint64(t.UID), nil
}

// helperGetCurrentComm is bpf_get_current_comm(buf, size): the command
// name, NUL-terminated and zero-padded to size (strscpy_pad).
func helperGetCurrentComm(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	size := uint32(r2)
	if size == 0 {
		return neg(einval), nil
	}
	if _, err := memArg(e, r1, size, true); err != nil {
		return 0, err
	}
	t, _ := runner.Of(e).Task()
	buf := vm.Slice(r1, uint64(size))
	n := copy(buf[:size-1], t.Comm[:min(len(t.Comm), runner.CommLen-1)])
	clear(buf[n:])
	return 0, nil
}
