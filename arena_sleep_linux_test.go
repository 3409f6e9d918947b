package bpfvm_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
)

// rawKernelProgram loads a bpfvm program's instructions (as loaded: map
// references by index into fds, kfunc calls by bpfvm id) into the kernel
// with bpf(BPF_PROG_LOAD) itself, as a sleepable program of type typ:
// cilium/ebpf's encoder would drop the offset of address space casts.
func rawKernelProgram(t *testing.T, typ ebpf.ProgramType, insns []isa.Instruction, fds []int) *ebpf.Program {
	t.Helper()
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("kernel BTF: %v", err)
	}
	patched := append([]isa.Instruction(nil), insns...)
	for i := range patched {
		ins := &patched[i]
		switch {
		case ins.IsLdImm64() && (ins.Src == isa.Register(isa.PseudoMapFD) || ins.Src == isa.Register(isa.PseudoMapValue)):
			ins.Imm = int32(fds[ins.Imm])
		case ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc):
			fn, err := kernel.AnyTypeByName(isa.KfuncName(ins.Imm))
			if err != nil {
				t.Fatalf("kernel BTF: %v", err)
			}
			id, _ := kernel.TypeID(fn)
			ins.Imm, ins.Off = int32(id), 0
		}
	}
	code := isa.EncodeProgram(patched)
	license := []byte("GPL\x00")
	log := make([]byte, 1<<20)
	var attr [168]byte
	ne := binary.NativeEndian
	ne.PutUint32(attr[0:], uint32(typ))
	ne.PutUint32(attr[4:], uint32(len(code)/8))
	ne.PutUint64(attr[8:], uint64(uintptr(unsafe.Pointer(&code[0]))))
	ne.PutUint64(attr[16:], uint64(uintptr(unsafe.Pointer(&license[0]))))
	ne.PutUint32(attr[24:], 1)
	ne.PutUint32(attr[28:], uint32(len(log)))
	ne.PutUint64(attr[32:], uint64(uintptr(unsafe.Pointer(&log[0]))))
	ne.PutUint32(attr[44:], unix.BPF_F_SLEEPABLE)
	// The verifier gives EAGAIN when a signal (the Go runtime's
	// preemption) interrupts it; cilium/ebpf retries such loads too.
	var fd uintptr
	var errno unix.Errno
	for range 10 {
		fd, _, errno = unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
		if errno != unix.EAGAIN {
			break
		}
	}
	if errno != 0 {
		if errno == unix.EPERM {
			t.Skipf("kernel: %v", errno)
		}
		n := 0
		for n < len(log) && log[n] != 0 {
			n++
		}
		t.Fatalf("kernel load: %v\n%s", errno, log[:n])
	}
	p, err := ebpf.NewProgramFromFD(int(fd))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestArenaSleepKernel runs testdata/arena_sleep.o's syscall programs,
// which allocate and free arena pages, on both engines (the JIT blinded
// or not, checked or not) and in the kernel, each on a fresh arena, and
// compares every value they report: reads of pages the arena does not
// hold (0, writes dropped, also for an access spilling into the next
// page), the allocator's results, sign-extending loads and atomic
// operations, which on a page the arena does not hold change no register.
func TestArenaSleepKernel(t *testing.T) {
	if !haveKernel(t) {
		t.Skip("no kernel")
	}
	spec, err := loader.LoadCollectionSpec("testdata/arena_sleep.o")
	if err != nil {
		t.Fatal(err)
	}
	const outSize = 32 * 8
	type config struct {
		engine bpfvm.Engine
		checks bpfvm.Checks
		blind  bool
	}
	configs := []config{{bpfvm.EngineInterpreter, bpfvm.ChecksDefault, false}, {bpfvm.EngineJIT, bpfvm.ChecksDefault, false},
		{bpfvm.EngineJIT, bpfvm.ChecksOn, false}, {bpfvm.EngineJIT, bpfvm.ChecksDefault, true}}
	compared := 0
	for _, prog := range []string{"pages", "sx_atomics"} {
		ks := spec.Maps["arena"]
		km, err := ebpf.NewMap(&ebpf.MapSpec{Type: ks.Type, MaxEntries: ks.MaxEntries, Flags: ks.Flags, MapExtra: ks.MapExtra})
		if err != nil {
			if os.IsPermission(err) {
				t.Skipf("kernel arena: %v", err)
			}
			t.Fatalf("kernel arena: %v", err)
		}
		defer km.Close()
		var kp *ebpf.Program
		for _, cf := range configs {
			name := fmt.Sprintf("%s/%s/%s/blind=%v", prog, cf.engine, cf.checks, cf.blind)
			opts := bpfvm.CollectionOptions{ProgramNames: []string{prog}, Programs: bpfvm.ProgramOptions{Engine: cf.engine, Checks: cf.checks}}
			opts.Programs.JIT.Blind = cf.blind
			vm, err := bpfvm.NewCollectionWithOptions(spec, opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			p := vm.Programs[prog]
			if kp == nil {
				kp = rawKernelProgram(t, ebpf.Syscall, p.Instructions(), []int{km.FD()})
			}
			out := make([]byte, outSize)
			ret, err := p.Run(&bpfvm.RunOptions{Context: make([]byte, outSize), ContextOut: out})
			vm.Close()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if compared%len(configs) == 0 {
				// The kernel's arena is fresh for each program, as
				// bpfvm's collection.
				kout := make([]byte, outSize)
				kret, err := kp.Run(&ebpf.RunOptions{Context: make([]byte, outSize), ContextOut: kout})
				if err != nil {
					t.Fatalf("%s: kernel: %v", name, err)
				}
				t.Cleanup(func() {})
				if ret != kret {
					t.Errorf("%s: returned %d, kernel %d", name, ret, kret)
				}
				for i := 0; i < outSize; i += 8 {
					if g, w := int64(ne64(out[i:])), int64(ne64(kout[i:])); g != w {
						t.Errorf("%s: v[%d] = %#x, kernel %#x", name, i/8, g, w)
					}
				}
				copy(kernelOut[:], kout)
				if testing.Verbose() {
					for i := 0; i < outSize; i += 8 {
						t.Logf("%s v[%d] = %#x", prog, i/8, ne64(kout[i:]))
					}
				}
			} else if string(out) != string(kernelOut[:]) {
				t.Errorf("%s: differs from the kernel's\n got % x\nwant % x", name, out, kernelOut[:])
			}
			compared++
		}
	}
	t.Logf("%d arena runs agree with the kernel's", compared)
}

var kernelOut [32 * 8]byte

func ne64(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }
