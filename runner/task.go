package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
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
	// CgroupID is the id of the task's cgroup v2 (bpf_get_current_cgroup_id):
	// for the host, its cgroup directory's inode number, which is the
	// kernel's id, or 1 (the root cgroup's) where there is none.
	CgroupID uint64
	// Ancestors are the ids of the ancestors of the task's cgroup, the
	// root's first (level 0), for bpf_get_current_ancestor_cgroup_id: the
	// task's own cgroup is at level len(Ancestors).
	Ancestors []uint64
	// PidNSDev and PidNSIno identify the task's pid namespace, as stat of
	// /proc/<pid>/ns/pid gives them (bpf_get_ns_current_pid_tgid); NSPID
	// and NSTGID are the task's ids in it, 0 for PID and TGID. The host's
	// task has its own namespace's.
	PidNSDev, PidNSIno uint64
	NSPID, NSTGID      uint32
}

// AncestorCgroup returns the id of the task's cgroup's ancestor at level
// (its own at its level), or 0 for a level out of range.
func (t *Task) AncestorCgroup(level int32) uint64 {
	switch {
	case level < 0 || int(level) > len(t.Ancestors):
		return 0
	case int(level) == len(t.Ancestors):
		return t.CgroupID
	}
	return t.Ancestors[level]
}

// CommLen is the kernel's TASK_COMM_LEN.
const CommLen = 16

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
	if len(t.Comm) > CommLen-1 {
		t.Comm = t.Comm[:CommLen-1]
	}
	t.CgroupID, t.Ancestors = hostCgroup()
	t.PidNSDev, t.PidNSIno = hostPidNS()
	return t
})

// Task returns the task a run reports and whether it is the host's: the
// tracing world's (Trace.Task), else the program's, else the host's.
func (r *Runner) Task() (Task, bool) {
	if t := r.Trace().Task; t != nil {
		return *t, false
	}
	if t := r.prog.Task; t != nil {
		return *t, false
	}
	return hostTask(), true
}
