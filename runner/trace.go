package runner

import "bytes"

// The world of a tracing program's run (a progtype.Type with Trace set):
// what its helpers read beyond the context. In the kernel it is the
// probed task and the machine's memory; here the host describes it, so
// that runs are deterministic and tracing programs can be tested without
// a kernel.

// Trace is the host's side of a run of a tracing program (kprobe,
// tracepoint, raw tracepoint, perf event): the task the run is in the
// context of, the memory the probe reads read, the probed function, the
// attach cookie, the stacks and the perf counter. The zero value is a
// world with no memory to read (every probe read faults), no stacks, no
// probed function and a zero cookie and counter. Runs only read it, so
// that concurrent runs may share one.
type Trace struct {
	// Task is the current task (bpf_get_current_pid_tgid, _uid_gid,
	// _comm, _cgroup_id); nil is the program's (ProgramOptions.Task), or
	// else the host process.
	Task *Task
	// TaskStruct is the address of the current task's struct task_struct,
	// what bpf_get_current_task returns for the program to read with
	// bpf_probe_read_kernel (give Memory at that address).
	TaskStruct uint64
	// Memory is the kernel and user memory at addresses of the world's
	// own that bpf_probe_read_kernel, bpf_probe_read_user and their _str
	// and legacy variants read. A read must lie inside one region; any
	// other faults, as a read of unmapped memory does in the kernel.
	Memory []Memory
	// FuncIP is the address of the probed function, what bpf_get_func_ip
	// returns to a kprobe: 0, as for a kprobe not on a function's entry,
	// unless given.
	FuncIP uint64
	// Cookie is the BPF cookie of the attachment (bpf_get_attach_cookie).
	Cookie uint64
	// KernelStack and UserStack are the instruction pointers of the
	// stacks bpf_get_stack reports (BPF_F_USER_STACK for the user one),
	// innermost first.
	KernelStack, UserStack []uint64
	// Counter is the perf event's counter a perf_event program reads with
	// bpf_perf_prog_read_value.
	Counter PerfValue
	// Buffer is a writable raw tracepoint's buffer (its first argument),
	// which the run reads and writes in a copy of its own and returns
	// in the result; a run of a program accessing more of it than it
	// holds is refused, as the kernel refuses the attach.
	Buffer []byte
	// Seq receives what an iterator program writes to its seq_file
	// (bpf_seq_printf, bpf_seq_write); nil discards it. It is the one
	// thing runs write: runs sharing a Trace with a Seq must not be
	// concurrent.
	Seq *bytes.Buffer
	// Symbols is the kernel's symbol table as bpf_kallsyms_lookup_name
	// reads it (syscall programs): addresses by name; a name it lacks is
	// not found.
	Symbols map[string]uint64
}

// Memory is a region of the traced world's memory at Addr: kernel memory,
// or with User set the current task's user memory.
type Memory struct {
	Addr uint64
	Data []byte
	User bool
}

// PerfValue is a perf counter's reading, struct bpf_perf_event_value.
type PerfValue struct {
	Counter, Enabled, Running uint64
}

// Signal is a signal a run sent with bpf_send_signal (to the current
// task's process) or bpf_send_signal_thread (to the thread).
type Signal struct {
	Sig    uint32
	Thread bool
}

// Read returns the n bytes at addr of the world's kernel (or, with user,
// user) memory, or false when no region holds them all.
func (t *Trace) Read(addr, n uint64, user bool) ([]byte, bool) {
	for _, m := range t.Memory {
		if m.User == user && addr >= m.Addr && addr-m.Addr <= uint64(len(m.Data)) && n <= uint64(len(m.Data))-(addr-m.Addr) {
			o := addr - m.Addr
			return m.Data[o : o+n], true
		}
	}
	return nil, false
}

// ReadSpan returns the world's kernel (or user) memory from addr to the
// end of the region holding addr, or nil: what a string read may cover.
func (t *Trace) ReadSpan(addr uint64, user bool) []byte {
	for _, m := range t.Memory {
		if m.User == user && addr >= m.Addr && addr-m.Addr < uint64(len(m.Data)) {
			return m.Data[addr-m.Addr:]
		}
	}
	return nil
}

// traceState is a tracing run's world and what the run sends back.
type traceState struct {
	world   *Trace
	signals []Signal
}

// noTrace is the world of a run without one.
var noTrace Trace

// beginTrace sets up the world of a tracing run (nil: the zero world).
func (r *Runner) beginTrace(t *Trace) {
	r.tr.world = t
	r.tr.signals = r.tr.signals[:0]
}

// Trace returns the world of the run (never nil).
func (r *Runner) Trace() *Trace {
	// The tracing types of BTF arguments (tp_btf, fentry ...) have no
	// test run of their own but see the world too: their kfuncs and
	// helpers read its tasks.
	if r.tr.world == nil || r.prog.Type.Trace == nil && !r.prog.Type.BTFArgs {
		return &noTrace
	}
	return r.tr.world
}

// SendSignal records a signal the run sends.
func (r *Runner) SendSignal(s Signal) { r.tr.signals = append(r.tr.signals, s) }
