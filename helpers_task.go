package bpfvm

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"bpfvm/vm"
)

// Task is the task the bpf_get_current_* helpers describe: in the kernel,
// the task a program runs in the context of. By default bpfvm reports the
// host process and the OS thread of the run.
type Task struct {
	// PID is the thread id (the kernel's task pid), TGID the process id.
	PID, TGID uint32
	UID, GID  uint32
	// Comm is the command name; programs see at most its first 15 bytes,
	// as the kernel's TASK_COMM_LEN is 16 with the NUL.
	Comm string
}

// taskCommLen is the kernel's TASK_COMM_LEN.
const taskCommLen = 16

// hostTask is the process's own task, minus the thread id, which
// bpf_get_current_pid_tgid reads at each call.
var hostTask = sync.OnceValue(func() Task {
	t := Task{TGID: uint32(os.Getpid()), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	// The kernel's own name for the process, else what it derives it from:
	// the base name of the executed file.
	if b, err := os.ReadFile("/proc/self/comm"); err == nil {
		t.Comm = string(bytes.TrimSuffix(b, []byte("\n")))
	} else if len(os.Args) > 0 {
		t.Comm = filepath.Base(os.Args[0])
	}
	if len(t.Comm) > taskCommLen-1 {
		t.Comm = t.Comm[:taskCommLen-1]
	}
	return t
})

// task returns the task a run reports and whether it is the host's.
func (r *runner) task() (Task, bool) {
	if t := r.prog.opts.Task; t != nil {
		return *t, false
	}
	return hostTask(), true
}

// helperGetCurrentPidTgid is bpf_get_current_pid_tgid: tgid << 32 | pid.
func helperGetCurrentPidTgid(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	t, host := runnerOf(e).task()
	if host {
		t.PID = uint32(unix.Gettid())
	}
	return uint64(t.TGID)<<32 | uint64(t.PID), nil
}

// helperGetCurrentUidGid is bpf_get_current_uid_gid: gid << 32 | uid.
func helperGetCurrentUidGid(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	t, _ := runnerOf(e).task()
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
	t, _ := runnerOf(e).task()
	buf := unsafeBytes(r1, uint64(size))
	n := copy(buf[:size-1], t.Comm[:min(len(t.Comm), taskCommLen-1)])
	clear(buf[n:])
	return 0, nil
}
