package bpfvm_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/progtype"
)

func mustObject(t *testing.T, name string, addr uint64, sets ...any) *bpfvm.KernelObject {
	t.Helper()
	o, err := bpfvm.NewKernelObject(nil, name, addr)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(sets); i += 2 {
		if err := o.Set(sets[i].(string), sets[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// TestKernelObjectHelperRuns: bpf_task_pt_regs, bpf_find_vma and
// bpf_d_path on the world's kernel objects, on both engines, checked and
// not: the registers at the top of the task's stack, the area holding an
// address (its vm_start, through the callback; -ENOENT for none), a
// path's name across a mount, " (deleted)" for an unhashed dentry,
// -ENAMETOOLONG for a short buffer.
func TestKernelObjectHelperRuns(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	const stack = 0xffffc90000100000
	mm := mustObject(t, "mm_struct", 0xffff888000500000)
	task := mustObject(t, "task_struct", 0xffff888000100000, "pid", 42, "stack", uint64(stack), "mm", mm)
	regs := mustObject(t, "pt_regs", stack+16384-uint64(len(mustObject(t, "pt_regs", 0).Data)), "ip", uint64(0x401234))
	vma := mustObject(t, "vm_area_struct", 0xffff888000600000, "vm_start", uint64(0x400000), "vm_end", uint64(0x402000), "vm_mm", mm)
	other := mustObject(t, "vm_area_struct", 0xffff888000610000, "vm_start", uint64(0x400000), "vm_end", uint64(0x402000))
	world := &bpfvm.Trace{Objects: []*bpfvm.KernelObject{task, regs, mm, other, vma}}
	ip, _ := regs.Offset("ip")
	vmStart, _ := vma.Offset("vm_start")
	// tp_btf at sched_switch, prev (ctx[1]) is the task: r0 = regs->ip,
	// + 1 << 32 if find_vma(prev, addr) finds vm_start 0x400000 for
	// 0x401000, + 1 << 33 if it says -ENOENT for 0x500000.
	src := fmt.Sprintf(`r6 = *(u64 *)(r1 +8)
r1 = r6
call 175
r7 = *(u64 *)(r0 +%d)
*(u64 *)(r10 -8) = 0
r1 = r6
r2 = 0x401000
r3 = subprog[cb] ll
r4 = r10
r4 += -8
r5 = 0
call 180
if r0 != 0 goto miss
r1 = *(u64 *)(r10 -8)
if r1 != 0x400000 goto miss
r1 = 1
r1 <<= 32
r7 += r1
miss: r1 = r6
r2 = 0x500000
r3 = subprog[cb] ll
r4 = r10
r4 += -8
r5 = 0
call 180
if r0 != -2 goto out
r1 = 1
r1 <<= 33
r7 += r1
out: r0 = r7
exit
cb: r0 = *(u64 *)(r2 +%d)
*(u64 *)(r3 +0) = r0
r0 = 0
exit`, ip, vmStart)
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := make([]byte, 8*progtype.MaxTracingArgs)
	binary.LittleEndian.PutUint64(ctx[8:], task.Addr)
	want := uint64(0x401234) | 1<<32 | 1<<33
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			p, err := bpfvm.NewRawProgram("task", ebpf.Tracing, prog, bpfvm.ProgramOptions{Engine: e, Checks: checks, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_switch"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Execute(&bpfvm.RunOptions{Context: ctx, Trace: world})
			p.Close()
			if err != nil || res.R0 != want {
				t.Errorf("%v checks %v: %#x, %v; want %#x", e, checks, res.R0, err, want)
			}
		}
	}

	// Paths: / is the root mount's root; /mnt holds a second mount whose
	// root has "data"; "etc/passwd" on the root mount; "old" unhashed.
	name := func(addr uint64, s string) *bpfvm.KernelObject {
		return mustObject(t, "task_struct", addr, "comm", s) // any bytes holding s
	}
	rootMount := mustObject(t, "mount", 0xffff888001000000)
	rootMnt := rootMount.Addr + uint64(memberOffset(t, rootMount, "mnt"))
	subMount := mustObject(t, "mount", 0xffff888001100000)
	subMnt := subMount.Addr + uint64(memberOffset(t, subMount, "mnt"))
	var objs []*bpfvm.KernelObject
	dentry := func(addr uint64, parent uint64, n string, hashed bool) *bpfvm.KernelObject {
		s := name(addr+0x800000, n)
		comm, _ := s.Offset("comm")
		d := mustObject(t, "dentry", addr, "d_parent", parent, "d_name.len", uint32(len(n)), "d_name.name", s.Addr+uint64(comm))
		if parent == 0 {
			d.Set("d_parent", d)
		}
		if hashed {
			d.Set("d_hash.pprev", uint64(0xffff888000000008))
		}
		objs = append(objs, d, s)
		return d
	}
	root := dentry(0xffff888002000000, 0, "/", true)
	etc := dentry(0xffff888002010000, root.Addr, "etc", true)
	passwd := dentry(0xffff888002020000, etc.Addr, "passwd", true)
	old := dentry(0xffff888002030000, etc.Addr, "old", false)
	mntDir := dentry(0xffff888002040000, root.Addr, "mnt", true)
	subRoot := dentry(0xffff888002050000, 0, "/", true)
	data := dentry(0xffff888002060000, subRoot.Addr, "data", true)
	for _, s := range []struct {
		o    *bpfvm.KernelObject
		path string
		v    any
	}{
		{rootMount, "mnt.mnt_root", root}, {rootMount, "mnt_parent", rootMount},
		{subMount, "mnt.mnt_root", subRoot}, {subMount, "mnt_parent", rootMount}, {subMount, "mnt_mountpoint", mntDir},
	} {
		if err := s.o.Set(s.path, s.v); err != nil {
			t.Fatal(err)
		}
	}
	objs = append(objs, rootMount, subMount)
	paths := []struct {
		dentry *bpfvm.KernelObject
		mnt    uint64
		size   int
		want   string
		ret    int64
	}{
		{passwd, rootMnt, 64, "/etc/passwd", 12},
		{data, subMnt, 64, "/mnt/data", 10},
		{old, rootMnt, 64, "/etc/old (deleted)", 19},
		{root, rootMnt, 64, "/", 2},
		{passwd, rootMnt, 8, "", -36},
	}
	for i, c := range paths {
		p := mustObject(t, "path", 0xffff888003000000+uint64(i)<<12, "dentry", c.dentry, "mnt", c.mnt)
		w := &bpfvm.Trace{Objects: append([]*bpfvm.KernelObject{p}, objs...)}
		// fentry at vfs_truncate(const struct path *, loff_t): d_path
		// into 64 bytes of stack; r0 = its return, the name in the
		// stack read back by probe loads is compared by the host.
		src := "r6 = r1\nr1 = 0\n"
		for off := -64; off < 0; off += 8 {
			src += fmt.Sprintf("*(u64 *)(r10 %d) = r1\n", off)
		}
		src += fmt.Sprintf("r1 = *(u64 *)(r6 +0)\nr2 = r10\nr2 += -64\nr3 = %d\ncall 147\nr7 = r0\nr7 <<= 56\n", c.size)
		for off := -64; off < 0; off += 8 {
			src += fmt.Sprintf("r1 = *(u64 *)(r10 %d)\nr7 += r1\n", off)
		}
		src += "r0 = r7\nexit"
		prog, err := isa.Assemble(src)
		if err != nil {
			t.Fatal(err)
		}
		ctx := make([]byte, 8*progtype.MaxTracingArgs)
		binary.LittleEndian.PutUint64(ctx, p.Addr)
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			fp, err := bpfvm.NewRawProgram("dpath", ebpf.Tracing, prog, bpfvm.ProgramOptions{Engine: e, AttachType: ebpf.AttachModifyReturn, AttachTo: "security_path_truncate"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := fp.Execute(&bpfvm.RunOptions{Context: ctx, Trace: w})
			fp.Close()
			// The return in the top byte plus the buffer's words.
			var buf [64]byte
			if c.ret > 0 {
				copy(buf[:], c.want)
			}
			sum := uint64(c.ret) << 56
			for i := 0; i < 64; i += 8 {
				sum += binary.LittleEndian.Uint64(buf[i:])
			}
			if err != nil || res.R0 != sum {
				t.Errorf("%q on %v: %#x, %v; want %#x (return %d)", c.want, e, res.R0, err, sum, c.ret)
			}
		}
	}
}

func memberOffset(t *testing.T, o *bpfvm.KernelObject, path string) uint32 {
	t.Helper()
	off, err := o.Offset(path)
	if err != nil {
		t.Fatal(err)
	}
	return off
}
