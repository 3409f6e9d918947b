package bpfvm_test

import (
	"encoding/binary"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm"
)

// nsPidTgidSpec is a raw tracepoint calling
// bpf_get_ns_current_pid_tgid(args[0], args[1], &info, size) and returning
// its error, or info.tgid when args[2] is set, else info.pid.
func nsPidTgidSpec(size int32) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"ns": {
		Name: "ns", Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadMem(asm.R1, asm.R6, 0, asm.DWord),
			asm.LoadMem(asm.R2, asm.R6, 8, asm.DWord),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8),
			asm.Mov.Imm(asm.R4, size),
			asm.FnGetNsCurrentPidTgid.Call(),
			asm.JNE.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R1, asm.R6, 16, asm.DWord),
			asm.LoadMem(asm.R0, asm.RFP, -8, asm.Word),
			asm.JEq.Imm(asm.R1, 0, "out"),
			asm.LoadMem(asm.R0, asm.RFP, -4, asm.Word),
			asm.Return().WithSymbol("out"),
		},
	}}}
}

// TestNSCurrentPidTgidKernel compares bpf_get_ns_current_pid_tgid with the
// kernel's test run of the same raw tracepoint, in this thread: the ids in
// the process's pid namespace, and -EINVAL for another namespace, a device
// number wider than 32 bits or a size other than 8.
func TestNSCurrentPidTgidKernel(t *testing.T) {
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		t.Skip(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	dev, ino := uint64(st.Dev), st.Ino
	args := func(a ...uint64) []byte {
		b := make([]byte, 8*len(a))
		for i, v := range a {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	compared := 0
	for _, size := range []int32{8, 4} {
		spec := nsPidTgidSpec(size)
		coll, err := bpfvm.NewCollection(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer coll.Close()
		var kp *ebpf.Program
		if haveKernel(t) {
			kc, err := ebpf.NewCollection(spec)
			if err == nil {
				defer kc.Close()
				kp = kc.Programs["ns"]
			} else {
				t.Logf("kernel: %v", err)
			}
		}
		for _, ctx := range [][]byte{
			args(dev, ino, 0), args(dev, ino, 1), args(dev, ino+1, 0), args(dev+1, ino, 0), args(dev|1<<32, ino, 0),
		} {
			func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				res, err := coll.Programs["ns"].Execute(&bpfvm.RunOptions{Context: ctx})
				if err != nil {
					t.Fatal(err)
				}
				if kp == nil {
					return
				}
				kret, err := kp.Run(&ebpf.RunOptions{Context: ctx})
				if err != nil {
					t.Fatal(err)
				}
				compared++
				if kret != uint32(res.R0) {
					t.Errorf("size %d args %x: bpfvm %d, kernel %d", size, ctx, int32(res.R0), int32(kret))
				}
			}()
		}
	}
	t.Logf("%d runs compared with the kernel", compared)
}
