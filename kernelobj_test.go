package bpfvm_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/progtype"
)

// worldTasks builds a task and its parent as kernel objects of spec at
// kernel-like addresses: pid 42 (comm "child") whose real_parent is pid 7,
// whose real_parent is an address no object holds.
func worldTasks(t testing.TB, spec *btf.Spec) (child, parent *bpfvm.KernelObject) {
	t.Helper()
	child, err := bpfvm.NewKernelObject(spec, "task_struct", 0xffff888000100000)
	if err != nil {
		t.Fatal(err)
	}
	parent, err = bpfvm.NewKernelObject(spec, "task_struct", 0xffff888000200000)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		o    *bpfvm.KernelObject
		path string
		v    any
	}{
		{child, "pid", 42}, {child, "tgid", 40}, {child, "comm", "child"}, {child, "real_parent", parent},
		{parent, "pid", 7}, {parent, "real_parent", uint64(0xffff8880dead0000)},
	} {
		if err := s.o.Set(s.path, s.v); err != nil {
			t.Fatal(err)
		}
	}
	return child, parent
}

func memberOff(t testing.TB, o *bpfvm.KernelObject, path string) int {
	t.Helper()
	off, err := o.Offset(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(off)
}

// TestKernelObjects: probe loads through BTF pointers read the world's
// kernel objects on both engines, checked and not: a tp_btf program at
// sched_switch reads prev's pid and comm, follows real_parent to the
// parent's pid, and reads 0 through the parent's real_parent, which no
// object holds (the kernel's exception table makes such a fault read 0),
// and past the end of an object; bpf_probe_read_kernel reads the objects
// too.
func TestKernelObjects(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	child, parent := worldTasks(t, nil)
	pid, comm, rp := memberOff(t, child, "pid"), memberOff(t, child, "comm"), memberOff(t, child, "real_parent")
	// r0 = pid | comm[0]<<16 | parent pid<<32 | grandparent pid<<48.
	src := fmt.Sprintf(`r6 = *(u64 *)(r1 +8)
r0 = *(u32 *)(r6 +%[1]d)
r2 = *(u8 *)(r6 +%[2]d)
r2 <<= 16
r0 |= r2
r7 = *(u64 *)(r6 +%[3]d)
r2 = *(u32 *)(r7 +%[1]d)
r2 <<= 32
r0 |= r2
r8 = *(u64 *)(r7 +%[3]d)
r2 = *(u32 *)(r8 +%[1]d)
r2 += 1
r2 <<= 48
r0 |= r2
exit`, pid, comm, rp)
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := make([]byte, 8*progtype.MaxTracingArgs)
	binary.LittleEndian.PutUint64(ctx[8:], child.Addr)
	world := &bpfvm.Trace{Objects: []*bpfvm.KernelObject{child, parent}}
	want := uint64(42) | uint64('c')<<16 | 7<<32 | 1<<48
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			p, err := bpfvm.NewRawProgram("objs", ebpf.Tracing, prog, bpfvm.ProgramOptions{Engine: e, Checks: checks, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_switch"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Execute(&bpfvm.RunOptions{Context: ctx, Trace: world})
			if err != nil || res.R0 != want {
				t.Errorf("%v checks %v: r0 = %#x, %v; want %#x", e, checks, res.R0, err, want)
			}
			// Without the world the same loads read 0.
			res, err = p.Execute(&bpfvm.RunOptions{Context: ctx})
			if err != nil || res.R0 != 1<<48 {
				t.Errorf("%v checks %v, no world: r0 = %#x, %v", e, checks, res.R0, err)
			}
			p.Close()
		}
	}

	// bpf_probe_read_kernel reads the objects' bytes, and faults
	// (-EFAULT) for a read past an object's end.
	size := len(child.Data)
	kp := fmt.Sprintf(`call 158
r6 = r0
r1 = r10
r1 += -8
r2 = 4
r3 = r6
r3 += %d
call 113
r7 = *(u32 *)(r10 -8)
r1 = r10
r1 += -16
r2 = 8
r3 = r6
r3 += %d
call 113
r0 *= 1000
r0 += r7
exit`, pid, size-4)
	prog, err = isa.Assemble(kp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		p, err := bpfvm.NewRawProgram("read", ebpf.Kprobe, prog, bpfvm.ProgramOptions{Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Execute(&bpfvm.RunOptions{Context: make([]byte, 168), Trace: &bpfvm.Trace{TaskStruct: child.Addr, Objects: world.Objects}})
		p.Close()
		if want := -14*1000 + 42; err != nil || int64(res.R0) != int64(want) {
			t.Errorf("%v: probe reads: %d, %v; want %d", e, int64(res.R0), err, want)
		}
	}
}

// TestKernelObjectSet: members by path, into anonymous members, arrays and
// bitfields; errors for what is not there.
func TestKernelObjectSet(t *testing.T) {
	spec, err := kernelbtf.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	sk, err := bpfvm.NewKernelObject(spec, "tcp_sock", 0xffff888000300000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		v    any
		want uint64
	}{
		{"inet_conn.icsk_inet.sk.__sk_common.skc_family", uint16(10), 10},
		{"skc_family", 2, 2},
		{"srtt_us", uint32(8000), 8000},
		{"sk_protocol", 6, 6},
		{"skc_dport", uint16(0x5000), 0x5000},
	} {
		if err := sk.Set(c.path, c.v); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if got, err := sk.Get(c.path); err != nil || got != c.want {
			t.Errorf("%s: %d, %v; want %d", c.path, got, err, c.want)
		}
	}
	if got, _ := sk.Get("inet_conn.icsk_inet.sk.__sk_common.skc_family"); got != 2 {
		t.Errorf("skc_family by its full path: %d, want 2", got)
	}
	if err := sk.Set("no_such_member", 1); !errors.Is(err, bpfvm.ErrNoField) {
		t.Errorf("no such member: %v", err)
	}
	if _, err := bpfvm.NewKernelObject(spec, "no_such_struct", 0); err == nil {
		t.Error("no such struct: no error")
	}
}

// BenchmarkKernelProbeLoad: 64 probe loads of the world's task_struct per
// run (bpf_get_current_task_btf's pointer: the probe routine goes to the
// kernel table for a kernel-half address) against 64 plain stack loads and
// 64 probe loads of the stack (a bpf_rdonly_cast pointer), on both engines
// unchecked.
func BenchmarkKernelProbeLoad(b *testing.B) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		b.Skip("no host BTF")
	}
	child, parent := worldTasks(b, nil)
	pid := memberOff(b, child, "pid")
	body := func(ptr string, off int) string {
		s := "r1 = 42\n*(u64 *)(r10 -8) = r1\n" + ptr + "r6 = 0\n"
		for range 64 {
			s += fmt.Sprintf("r2 = *(u32 *)(r7 %+d)\nr6 += r2\n", off)
		}
		return s + "r0 = r6\nexit"
	}
	progs := map[string]string{
		"stack":       body("r7 = r10\n", -8),
		"probe-stack": body(fmt.Sprintf("r1 = r10\nr1 += -8\nr2 = 0\ncall kernel-function#%d\nr7 = r0\n", isa.KfuncRdonlyCast), 0),
		"kernel":      body("call 158\nr7 = r0\n", pid),
	}
	world := &bpfvm.Trace{TaskStruct: child.Addr, Objects: []*bpfvm.KernelObject{parent, child}}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, name := range []string{"stack", "probe-stack", "kernel"} {
			b.Run(fmt.Sprintf("%v/%s", e, name), func(b *testing.B) {
				insns, err := isa.Assemble(progs[name])
				if err != nil {
					b.Fatal(err)
				}
				p, err := bpfvm.NewRawProgram("bench", ebpf.Kprobe, insns, bpfvm.ProgramOptions{Engine: e, Checks: bpfvm.ChecksOff})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				res, err := p.Execute(&bpfvm.RunOptions{Context: make([]byte, 168), Trace: world, Repeat: uint32(b.N)})
				if err != nil || res.R0 != 42*64 {
					b.Fatalf("r0 = %d, %v", res.R0, err)
				}
				b.ReportMetric(float64(res.Duration.Nanoseconds())/64, "ns/load")
			})
		}
	}
}
