package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// traceEvent is struct event of testdata/tracing.c.
type traceEvent struct {
	PidTgid, UidGid, Cgroup, IP, Cookie, Task uint64
	Ret, Len                                  int64
	Comm                                      [16]byte
	Name                                      [32]byte
}

// The keys of tracing.c's events map.
const (
	evOpen = iota + 1
	evOpenRet
	evTP
	evRawTP
	evPerf
	evExec
)

func traceEventOf(t *testing.T, c *bpfvm.Collection, key uint32) traceEvent {
	t.Helper()
	var e traceEvent
	if err := c.Maps["events"].Lookup(key, &e); err != nil {
		t.Fatalf("event %d: %v", key, err)
	}
	return e
}

// cstr is the NUL-terminated string at the start of b.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// TestTracingObjectKernel loads testdata/tracing.o's kprobe, kretprobe,
// tracepoint, raw tracepoint and perf_event programs through the API and
// into the kernel: both accept them.
func TestTracingObjectKernel(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/tracing.o", bpfvm.CollectionOptions{})
		for name, p := range vm.Programs {
			if kern != nil && kern.Programs[name] == nil {
				t.Errorf("%s: the kernel did not load it", name)
			}
			t.Logf("%s: %s", name, p.Type())
		}
		if len(vm.Programs) != 6 {
			t.Errorf("%d programs, want 6", len(vm.Programs))
		}
	})
}

// ptRegs returns an x86-64 struct pt_regs with the registers given by
// offset (progtype.PtRegs*).
func ptRegs(regs map[int]uint64) []byte {
	b := make([]byte, progtype.PtRegsSize)
	for off, v := range regs {
		binary.LittleEndian.PutUint64(b[off:], v)
	}
	return b
}

// The world of the tracing tests: a task, a user string and a kernel
// struct open_how.
const (
	userName = 0x7fff0000
	kernHow  = 0xffff888000001000
	taskAddr = 0xffff888000200000
)

var traceTask = &bpfvm.Task{PID: 4242, TGID: 4200, UID: 1000, GID: 100, Comm: "cat", CgroupID: 777}

func traceWorld() *bpfvm.Trace {
	how := make([]byte, 24)
	binary.LittleEndian.PutUint64(how[8:], 0o644)
	return &bpfvm.Trace{
		Task: traceTask, TaskStruct: taskAddr, FuncIP: 0xffffffff81234560, Cookie: 99,
		Memory: []bpfvm.TraceMemory{
			{Addr: userName, Data: []byte("/etc/passwd\x00junk"), User: true},
			{Addr: kernHow, Data: how},
		},
		KernelStack: []uint64{0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030, 0xffffffff81000040, 0xffffffff81000050},
		Counter:     bpfvm.PerfValue{Counter: 12345, Enabled: 2, Running: 1},
	}
}

// TestTracingRuns runs tracing.o's programs on host-given contexts and
// worlds: what each reads of its registers, record or arguments, of the
// world's memory and task, and what it returns.
func TestTracingRuns(t *testing.T) {
	wantTask := func(t *testing.T, e traceEvent) {
		t.Helper()
		if e.PidTgid != 4200<<32|4242 || e.UidGid != 100<<32|1000 || e.Cgroup != 777 || cstr(e.Comm[:]) != "cat" || e.Task != taskAddr {
			t.Errorf("task: pid_tgid %#x uid_gid %#x cgroup %d comm %q task %#x", e.PidTgid, e.UidGid, e.Cgroup, cstr(e.Comm[:]), e.Task)
		}
	}
	for _, engine := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		t.Run(engine.String(), func(t *testing.T) { tracingRuns(t, engine, wantTask) })
	}
}

// tracingRuns is TestTracingRuns on one engine.
func tracingRuns(t *testing.T, engine bpfvm.Engine, wantTask func(*testing.T, traceEvent)) {
	const enoent, efault, erange = 2, 14, 34
	modes(t, func(t *testing.T, noVerify bool) {
		vm := loadVM(t, noVerify, "testdata/tracing.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: engine}})
		regs := ptRegs(map[int]uint64{progtype.PtRegsDI: uint64(0xffffffffffffff9c), progtype.PtRegsSI: userName, progtype.PtRegsDX: kernHow})

		t.Run("kprobe", func(t *testing.T) {
			res, err := vm.Programs["kprobe_openat"].Execute(&bpfvm.RunOptions{Context: regs, Trace: traceWorld()})
			if err != nil {
				t.Fatal(err)
			}
			e := traceEventOf(t, vm, evOpen)
			wantTask(t, e)
			if res.R0 != 12 || e.Len != 12 || cstr(e.Name[:]) != "/etc/passwd" || e.Ret != 0o644 || e.IP != 0xffffffff81234560 || e.Cookie != 99 {
				t.Errorf("r0 %d, event len %d name %q mode %#o ip %#x cookie %d", res.R0, e.Len, cstr(e.Name[:]), e.Ret, e.IP, e.Cookie)
			}
			if len(res.Signals) != 1 || res.Signals[0] != (bpfvm.Signal{Sig: 10}) {
				t.Errorf("signals %v, want SIGUSR1", res.Signals)
			}
		})
		t.Run("kprobe faults", func(t *testing.T) {
			// No memory: the user read faults; a kernel read of a user
			// address is out of range.
			r := ptRegs(map[int]uint64{progtype.PtRegsSI: userName, progtype.PtRegsDX: 0x1000})
			res, err := vm.Programs["kprobe_openat"].Execute(&bpfvm.RunOptions{Context: r})
			if err != nil {
				t.Fatal(err)
			}
			e := traceEventOf(t, vm, evOpen)
			if int32(res.R0) != -efault || e.Len != -efault || e.Ret != -erange || e.Name != [32]byte{} || len(res.Signals) != 0 {
				t.Errorf("r0 %d, len %d, mode read %d, name %q, signals %v", int32(res.R0), e.Len, e.Ret, e.Name, res.Signals)
			}
		})
		t.Run("kretprobe", func(t *testing.T) {
			r := ptRegs(map[int]uint64{progtype.PtRegsAX: uint64(0xfffffffffffffffe)})
			res, err := vm.Programs["kretprobe_openat"].Execute(&bpfvm.RunOptions{Context: r, Trace: traceWorld()})
			if err != nil {
				t.Fatal(err)
			}
			if e := traceEventOf(t, vm, evOpenRet); int32(res.R0) != -enoent || e.Ret != -enoent {
				t.Errorf("r0 %d, ret %d", int32(res.R0), e.Ret)
			}
		})
		t.Run("tracepoint", func(t *testing.T) {
			rec := make([]byte, 64)
			binary.LittleEndian.PutUint64(rec[8:], 257) // openat
			binary.LittleEndian.PutUint64(rec[24:], userName)
			res, err := vm.Programs["tp_sys_enter"].Execute(&bpfvm.RunOptions{Context: rec, Trace: traceWorld(), Repeat: 3})
			if err != nil {
				t.Fatal(err)
			}
			var n uint64
			if err := vm.Maps["counts"].Lookup(uint32(257), &n); err != nil || n != 3 {
				t.Errorf("count %d (%v), want 3", n, err)
			}
			e := traceEventOf(t, vm, evTP)
			wantTask(t, e)
			if res.R0 != 257 || e.Len != 12 || cstr(e.Name[:]) != "/etc/passwd" || e.Cookie != 99 {
				t.Errorf("r0 %d, len %d, name %q, cookie %d", res.R0, e.Len, cstr(e.Name[:]), e.Cookie)
			}
		})
		t.Run("perf_event", func(t *testing.T) {
			ctx := make([]byte, progtype.PerfEventDataSize)
			binary.LittleEndian.PutUint64(ctx[progtype.PtRegsIP:], 0xffffffff81000010)
			binary.LittleEndian.PutUint64(ctx[progtype.PerfEventSamplePeriod:], 1000)
			binary.LittleEndian.PutUint64(ctx[progtype.PerfEventAddr:], 0xdead)
			res, err := vm.Programs["perf_sample"].Execute(&bpfvm.RunOptions{Context: ctx, Trace: traceWorld()})
			if err != nil {
				t.Fatal(err)
			}
			e := traceEventOf(t, vm, evPerf)
			if res.R0 != 4 || e.IP != 0xffffffff81000010 || e.Cookie != 1000 || e.Ret != 0xdead || e.Len != 12345 || e.Task != 0xffffffff81000010 {
				t.Errorf("r0 %d, ip %#x, period %d, addr %#x, counter %d, frame %#x", res.R0, e.IP, e.Cookie, e.Ret, e.Len, e.Task)
			}
		})
		t.Run("no packet", func(t *testing.T) {
			_, err := vm.Programs["kprobe_openat"].Run(&bpfvm.RunOptions{Data: make([]byte, 14)})
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("a packet: %v, want EINVAL", err)
			}
		})
	})
}

// TestTracingUnprivileged checks that tracing types load with CAP_PERFMON
// only, as the kernel's is_perfmon_prog_type.
func TestTracingUnprivileged(t *testing.T) {
	for _, typ := range []ebpf.ProgramType{ebpf.Kprobe, ebpf.TracePoint, ebpf.RawTracepoint, ebpf.RawTracepointWritable, ebpf.PerfEvent} {
		spec := &ebpf.ProgramSpec{Type: typ, License: "GPL", Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}
		if _, err := bpfvm.NewProgramWithOptions(spec, bpfvm.ProgramOptions{Unprivileged: true}); !errors.Is(err, bpfvm.ErrPermission) || !errors.Is(err, syscall.EPERM) {
			t.Errorf("%s: %v, want EPERM", typ, err)
		}
		p, err := bpfvm.NewProgram(spec)
		if err != nil {
			t.Errorf("%s: %v", typ, err)
			continue
		}
		p.Close()
	}
}

// TestRawTracepointKernel runs tracing.o's raw tracepoint in bpfvm and in
// the kernel's test run (bpf_prog_test_run_raw_tp) on the same arguments:
// the result, the probe reads' errors, the task and cgroup seen (on one
// thread, which both see as the current task), and the test run's rules
// for the context, repetitions and packets.
func TestRawTracepointKernel(t *testing.T) {
	args := func(a ...uint64) []byte {
		b := make([]byte, 8*len(a))
		for i, v := range a {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	vmc, kern := loadHelpers(t, false, "testdata/tracing.o", bpfvm.CollectionOptions{})
	p := vmc.Programs["raw_tp_sys_enter"]
	compared := 0
	for _, c := range []struct {
		name string
		opts ebpf.RunOptions
	}{
		{"null regs", ebpf.RunOptions{Context: args(0, 42)}},
		{"user regs", ebpf.RunOptions{Context: args(0x1000, 1)}},
		{"non-canonical regs", ebpf.RunOptions{Context: args(0x8000000000000000, 2)}},
		{"unmapped kernel regs", ebpf.RunOptions{Context: args(0xffffffffffffff00, 3)}},
		{"all arguments", ebpf.RunOptions{Context: args(0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)}},
		{"short context", ebpf.RunOptions{Context: args(0)}},
		{"long context", ebpf.RunOptions{Context: args(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)}},
		{"no context", ebpf.RunOptions{}},
		{"repeat", ebpf.RunOptions{Context: args(0, 1), Repeat: 2}},
		{"packet", ebpf.RunOptions{Context: args(0, 1), Data: make([]byte, 14)}},
		{"context out", ebpf.RunOptions{Context: args(0, 1), ContextOut: make([]byte, 16)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Both runs on this thread, the current task of both.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			o := c.opts
			ours, oerr := p.Execute(&bpfvm.RunOptions{Context: o.Context, Repeat: o.Repeat, Data: o.Data, ContextOut: o.ContextOut})
			var e traceEvent
			if oerr == nil {
				e = traceEventOf(t, vmc, evRawTP)
			}
			if kern == nil {
				return
			}
			kret, kerr := kern.Programs["raw_tp_sys_enter"].Run(&o)
			compared++
			if (oerr == nil) != (kerr == nil) || kerr != nil && !errors.Is(oerr, syscall.EINVAL) {
				t.Fatalf("bpfvm: %v, kernel: %v", oerr, kerr)
			}
			if kerr != nil {
				return
			}
			var k traceEvent
			if err := kern.Maps["events"].Lookup(uint32(evRawTP), &k); err != nil {
				t.Fatal(err)
			}
			t.Logf("r0 %d read %d str %d %q pid_tgid %#x cgroup %d comm %q", int32(kret), k.Ret, k.Len, cstr(k.Name[:]), k.PidTgid, k.Cgroup, cstr(k.Comm[:]))
			if kret != uint32(ours.R0) || k.Ret != e.Ret || k.IP != e.IP || k.Len != e.Len || k.Name != e.Name {
				t.Errorf("bpfvm r0 %d read %d orig %d str %d %q, kernel r0 %d read %d orig %d str %d %q",
					int32(ours.R0), e.Ret, e.IP, e.Len, cstr(e.Name[:]), int32(kret), k.Ret, k.IP, k.Len, cstr(k.Name[:]))
			}
			if k.PidTgid != e.PidTgid || k.UidGid != e.UidGid || k.Cgroup != e.Cgroup || k.Comm != e.Comm {
				t.Errorf("task: bpfvm pid_tgid %#x uid_gid %#x cgroup %d comm %q, kernel %#x %#x %d %q",
					e.PidTgid, e.UidGid, e.Cgroup, cstr(e.Comm[:]), k.PidTgid, k.UidGid, k.Cgroup, cstr(k.Comm[:]))
			}
		})
	}
	t.Logf("%d runs compared with the kernel", compared)
}

// stackidSpec is a raw tracepoint calling bpf_get_stackid(ctx, stacks,
// args[0]) and returning its result, with a stack trace map of
// maxEntries stacks of 16 frames.
func stackidSpec(maxEntries uint32) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"stacks": {Name: "stacks", Type: ebpf.StackTrace, KeySize: 4, ValueSize: 8 * 16, MaxEntries: maxEntries}},
		Programs: map[string]*ebpf.ProgramSpec{"stackid": {
			Name: "stackid", Type: ebpf.RawTracepoint, License: "GPL",
			Instructions: asm.Instructions{
				asm.LoadMem(asm.R3, asm.R1, 0, asm.DWord),
				asm.LoadMapPtr(asm.R2, 0).WithReference("stacks"),
				asm.FnGetStackid.Call(),
				asm.Return(),
			},
		}},
	}
}

// TestStackidKernel checks bpf_get_stackid against the kernel's test run:
// its errors, and the ids of the stacks the kernel stored, which are
// jhash2 of their frames as maps.Jhash2 computes it.
func TestStackidKernel(t *testing.T) {
	if !haveKernel(t) {
		t.Skip("no kernel")
	}
	kern, err := ebpf.NewCollection(stackidSpec(64))
	if err != nil {
		t.Skipf("kernel: %v", err)
	}
	defer kern.Close()
	vmc, err := bpfvm.NewCollection(stackidSpec(64))
	if err != nil {
		t.Fatal(err)
	}
	defer vmc.Close()
	args := func(flags uint64) []byte { return binary.LittleEndian.AppendUint64(nil, flags) }
	for _, c := range []struct {
		name  string
		flags uint64
	}{{"unknown flag", 1 << 12}, {"skip all", 255}} {
		k, err := kern.Programs["stackid"].Run(&ebpf.RunOptions{Context: args(c.flags)})
		if err != nil {
			t.Fatal(err)
		}
		o, err := vmc.Programs["stackid"].Run(&bpfvm.RunOptions{Context: args(c.flags), Trace: traceWorld()})
		if err != nil || o != k {
			t.Errorf("%s: bpfvm %d (%v), kernel %d", c.name, int32(o), err, int32(k))
		}
	}
	id, err := kern.Programs["stackid"].Run(&ebpf.RunOptions{Context: args(0)})
	if err != nil || int32(id) < 0 {
		t.Fatalf("kernel: id %d, %v", int32(id), err)
	}
	frames := make([]byte, 8*16)
	if err := kern.Maps["stacks"].Lookup(id, frames); err != nil {
		t.Fatal(err)
	}
	var words []uint32
	for i := 0; i < len(frames); i += 8 {
		if binary.LittleEndian.Uint64(frames[i:]) == 0 {
			break
		}
		words = append(words, binary.LittleEndian.Uint32(frames[i:]), binary.LittleEndian.Uint32(frames[i+4:]))
	}
	if got := maps.Jhash2(words, 0) & 63; got != id {
		t.Errorf("kernel stored %d frames at id %d, jhash2 gives %d", len(words)/2, id, got)
	}
}

// TestStackidRuns checks bpf_get_stackid on the world's stacks: the same
// stack gets the same id, another in its bucket -EEXIST unless
// BPF_F_REUSE_STACKID, and Go code reads, walks and deletes the stacks.
func TestStackidRuns(t *testing.T) {
	const eexist, efault = 17, 14
	vmc, err := bpfvm.NewCollection(stackidSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	defer vmc.Close()
	p, m := vmc.Programs["stackid"], vmc.Maps["stacks"]
	run := func(flags uint64, stack ...uint64) int32 {
		t.Helper()
		r, err := p.Run(&bpfvm.RunOptions{Context: binary.LittleEndian.AppendUint64(nil, flags), Trace: &bpfvm.Trace{KernelStack: stack, UserStack: []uint64{7}}})
		if err != nil {
			t.Fatal(err)
		}
		return int32(r)
	}
	if got := run(0, 1, 2, 3); got != 0 {
		t.Errorf("first stack: %d", got)
	}
	if got := run(0, 1, 2, 3); got != 0 {
		t.Errorf("same stack: %d", got)
	}
	if got := run(0, 4, 5); got != -eexist {
		t.Errorf("another stack in the bucket: %d, want -EEXIST", got)
	}
	if got := run(maps.StackReuseID|1, 4, 5, 6); got != 0 {
		t.Errorf("reused, one frame skipped: %d", got)
	}
	if got := run(3, 4, 5, 6); got != -efault {
		t.Errorf("all frames skipped: %d, want -EFAULT", got)
	}
	v := make([]byte, 8*16)
	if err := m.Lookup(uint32(0), v); err != nil || binary.LittleEndian.Uint64(v) != 5 || binary.LittleEndian.Uint64(v[8:]) != 6 || binary.LittleEndian.Uint64(v[16:]) != 0 {
		t.Errorf("stack 0: % x (%v)", v[:24], err)
	}
	var key uint32
	if err := m.NextKey(nil, &key); err != nil || key != 0 {
		t.Errorf("first key %d (%v)", key, err)
	}
	if err := m.Update(uint32(0), v, ebpf.UpdateAny); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("update: %v, want EINVAL", err)
	}
	if err := m.Delete(uint32(0)); err != nil {
		t.Fatal(err)
	}
	if err := m.Lookup(uint32(0), v); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("deleted: %v", err)
	}
	if got := run(maps.StackFastCmp|1<<8, 0); got != 0 {
		t.Errorf("user stack: %d", got)
	}
}

// probeSpec is a raw tracepoint calling probe read helper fn(fp-16, 16,
// args[0]) and returning its result in the low 16 bits and the first 2
// bytes read in the high 16.
func probeSpec(fn asm.BuiltinFunc) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"probe": {
		Name: "probe", Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R3, asm.R1, 0, asm.DWord),
			// A string on the stack at fp-32, for reads of the
			// program's own memory (args[0] == 1 reads it).
			asm.Mov.Imm(asm.R1, 0x636f6c),
			asm.StoreMem(asm.RFP, -32, asm.R1, asm.DWord),
			asm.JNE.Imm(asm.R3, 1, "read"),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -32),
			asm.Mov.Reg(asm.R1, asm.RFP).WithSymbol("read"),
			asm.Add.Imm(asm.R1, -16),
			asm.Mov.Imm(asm.R2, 16),
			fn.Call(),
			asm.LoadMem(asm.R1, asm.RFP, -16, asm.Half),
			asm.LSh.Imm(asm.R1, 16),
			asm.And.Imm(asm.R0, 0xffff),
			asm.Or.Reg(asm.R0, asm.R1),
			asm.Return(),
		},
	}}}
}

// TestProbeReadKernel compares the probe reads with the kernel's test run
// of a raw tracepoint, on addresses of each kind: the test's own user
// memory (given to bpfvm as the world's user memory at its address), the
// program's stack, unmapped user memory, kernel and non-canonical
// addresses. bpfvm's results, errors and bytes are the kernel's.
func TestProbeReadKernel(t *testing.T) {
	if !haveKernel(t) {
		t.Skip("no kernel")
	}
	user := append([]byte("user string\x00more"), make([]byte, 64)...)
	addr := uint64(uintptr(unsafe.Pointer(&user[0])))
	world := &bpfvm.Trace{Memory: []bpfvm.TraceMemory{{Addr: addr, Data: user, User: true}}}
	compared := 0
	for _, fn := range []asm.BuiltinFunc{asm.FnProbeReadUser, asm.FnProbeReadUserStr, asm.FnProbeReadKernel, asm.FnProbeReadKernelStr, asm.FnProbeRead, asm.FnProbeReadStr} {
		kern, err := ebpf.NewCollection(probeSpec(fn))
		if err != nil {
			t.Skipf("%s: no kernel to compare with: %v", fn, err)
		}
		vmc, err := bpfvm.NewCollection(probeSpec(fn))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []struct {
			name string
			addr uint64
		}{
			{"user memory", addr}, {"user memory +5", addr + 5}, {"own stack", 1}, {"null", 0}, {"unmapped user", 0x1000},
			{"kernel", 0xffff888000000000 - 4096}, {"non-canonical", 0x8000000000000000}, {"last user page", 1<<47 - 4096 - 8},
		} {
			ctx := binary.LittleEndian.AppendUint64(nil, a.addr)
			k, kerr := kern.Programs["probe"].Run(&ebpf.RunOptions{Context: ctx})
			o, oerr := vmc.Programs["probe"].Execute(&bpfvm.RunOptions{Context: ctx, Trace: world})
			runtime.KeepAlive(user)
			if kerr != nil || oerr != nil {
				t.Fatalf("%s %s: kernel %v, bpfvm %v", fn, a.name, kerr, oerr)
			}
			compared++
			if uint32(o.R0) != k {
				t.Errorf("%s %s: bpfvm %#x, kernel %#x", fn, a.name, uint32(o.R0), k)
			}
		}
		kern.Close()
		vmc.Close()
	}
	t.Logf("%d probe reads compared with the kernel", compared)
}

// TestRawTracepointWritable runs a writable raw tracepoint, which the
// kernel cannot test-run, on a buffer the world gives: it reads and
// writes the buffer through its first argument and gets it back in the
// result; a buffer shorter than the program's furthest access is refused
// as the kernel refuses the attach.
func TestRawTracepointWritable(t *testing.T) {
	spec := &ebpf.ProgramSpec{
		Name: "writable", Type: ebpf.RawTracepointWritable, License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord),
			asm.LoadMem(asm.R3, asm.R1, 8, asm.DWord),
			asm.StoreMem(asm.R2, 8, asm.R3, asm.DWord),
			asm.LoadMem(asm.R0, asm.R2, 0, asm.Word),
			asm.Return(),
		},
	}
	for _, noVerify := range []bool{false, true} {
		p, err := bpfvm.NewProgramWithOptions(spec, bpfvm.ProgramOptions{NoVerify: noVerify})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		buf := []byte{5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		res, err := p.Execute(&bpfvm.RunOptions{Context: binary.LittleEndian.AppendUint64(make([]byte, 8), 99), Trace: &bpfvm.Trace{Buffer: buf}})
		if err != nil {
			t.Fatal(err)
		}
		if res.R0 != 5 || len(res.Buffer) != 16 || binary.LittleEndian.Uint64(res.Buffer[8:]) != 99 || buf[8] != 0 {
			t.Errorf("noVerify %v: r0 %d, buffer % x, given % x", noVerify, res.R0, res.Buffer, buf)
		}
		_, err = p.Execute(&bpfvm.RunOptions{Context: make([]byte, 16), Trace: &bpfvm.Trace{Buffer: buf[:8]}})
		if noVerify && !errors.Is(err, vm.ErrMemory) || !noVerify && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("noVerify %v: a short buffer: %v", noVerify, err)
		}
	}
}

// TestAncestorCgroupKernel compares bpf_get_current_ancestor_cgroup_id
// with the kernel's raw tracepoint test run, for the host's task, at each
// level and out of range; and checks a world's task's.
func TestAncestorCgroupKernel(t *testing.T) {
	spec := &ebpf.ProgramSpec{
		Name: "ancestor", Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R1, asm.R1, 0, asm.DWord),
			asm.FnGetCurrentAncestorCgroupId.Call(),
			asm.Return(),
		},
	}
	p, err := bpfvm.NewProgram(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var kern *ebpf.Program
	if haveKernel(t) {
		if kern, err = ebpf.NewProgram(spec); err != nil {
			t.Logf("no kernel to compare with: %v", err)
		}
	}
	if kern != nil {
		defer kern.Close()
	}
	levels := []int64{0, 1, 2, 3, 8, -1, 1 << 32}
	for _, level := range levels {
		ctx := binary.LittleEndian.AppendUint64(nil, uint64(level))
		got, err := p.Run(&bpfvm.RunOptions{Context: ctx})
		if err != nil {
			t.Fatal(err)
		}
		if kern != nil {
			k, err := kern.Run(&ebpf.RunOptions{Context: ctx})
			if err != nil || k != got {
				t.Errorf("level %d: kernel %d (%v), bpfvm %d", level, k, err, got)
			}
		}
	}
	task := &bpfvm.Task{CgroupID: 30, Ancestors: []uint64{1, 20}}
	for level, want := range map[int64]uint32{0: 1, 1: 20, 2: 30, 3: 0, -1: 0} {
		got, err := p.Run(&bpfvm.RunOptions{Context: binary.LittleEndian.AppendUint64(nil, uint64(level)), Trace: &bpfvm.Trace{Task: task}})
		if err != nil || got != want {
			t.Errorf("world level %d: %d (%v), want %d", level, got, err, want)
		}
	}
}

// TestTracingCORE runs tracing.o's execsnoop-like tracepoint, whose
// BPF_CORE_READ(task, real_parent, tgid) is relocated against the kernel
// types shipped with bpfvm, on a world laid out by those types: the
// current task and its parent at the world's addresses.
func TestTracingCORE(t *testing.T) {
	spec, err := kernelbtf.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		t.Fatal(err)
	}
	offset := func(name string) uint32 {
		for _, m := range task.Members {
			if m.Name == name {
				return m.Offset.Bytes()
			}
		}
		t.Fatalf("task_struct has no %s", name)
		return 0
	}
	const parentAddr = taskAddr + 0x10000
	cur, parent := make([]byte, task.Size), make([]byte, task.Size)
	binary.LittleEndian.PutUint64(cur[offset("real_parent"):], parentAddr)
	binary.LittleEndian.PutUint32(cur[offset("tgid"):], 4200)
	binary.LittleEndian.PutUint32(parent[offset("tgid"):], 1234)
	world := traceWorld()
	world.Memory = append(world.Memory, bpfvm.TraceMemory{Addr: taskAddr, Data: cur}, bpfvm.TraceMemory{Addr: parentAddr, Data: parent})
	rec := make([]byte, 64)
	binary.LittleEndian.PutUint64(rec[8:], 59) // execve
	binary.LittleEndian.PutUint64(rec[16:], userName)
	modes(t, func(t *testing.T, noVerify bool) {
		vm := loadVM(t, noVerify, "testdata/tracing.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{KernelTypes: spec}})
		res, err := vm.Programs["tp_execve"].Execute(&bpfvm.RunOptions{Context: rec, Trace: world})
		if err != nil {
			t.Fatal(err)
		}
		e := traceEventOf(t, vm, evExec)
		if res.R0 != 1234 || e.Ret != 1234 || cstr(e.Name[:]) != "/etc/passwd" || e.PidTgid>>32 != 4200 {
			t.Errorf("r0 %d, ppid %d, name %q, pid_tgid %#x", res.R0, e.Ret, cstr(e.Name[:]), e.PidTgid)
		}
		// Without the parent's memory the read faults and gives 0.
		res, err = vm.Programs["tp_execve"].Execute(&bpfvm.RunOptions{Context: rec, Trace: traceWorld()})
		if err != nil || res.R0 != 0 {
			t.Errorf("no task memory: r0 %d (%v)", res.R0, err)
		}
	})
}
