package bpfvm_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// struct args of testdata/syscall.c.
const (
	sysArgsSize = 184
	sysB        = 8
	sysRet      = 12
	sysRes      = 56
	sysUser     = 88
	sysStr      = 96
	sysName     = 104
)

// sysArgs builds a struct args: a and b, the user addresses, the name.
func sysArgs(a uint64, b uint32, user, str uint64, name string) []byte {
	ctx := make([]byte, sysArgsSize)
	binary.NativeEndian.PutUint64(ctx, a)
	binary.NativeEndian.PutUint32(ctx[sysB:], b)
	binary.NativeEndian.PutUint64(ctx[sysUser:], user)
	binary.NativeEndian.PutUint64(ctx[sysStr:], str)
	copy(ctx[sysName:sysName+31], name)
	return ctx
}

// kallsyms returns the host's address of a kernel symbol, 0 if it cannot
// be read.
func kallsyms(name string) uint64 {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 3 && fs[2] == name {
			addr, _ := strconv.ParseUint(fs[0], 16, 64)
			return addr
		}
	}
	return 0
}

// TestSyscallRuns runs the syscall programs of testdata/syscall.c as the
// kernel's BPF_PROG_TEST_RUN does (the context copied in and back, which
// RunOptions.ContextOut receives), on both engines, and compares return
// values and contexts with the kernel's runs: the context itself, the
// errors of bpf() and close() for objects the world does not have,
// symbol and BTF lookups (the world's symbols are the host's
// /proc/kallsyms here; the BTF the host's), and user memory read by
// bpf_copy_from_user and bpf_copy_from_user_str (the caller's own memory
// for the kernel, the same bytes as the world's user memory for bpfvm).
func TestSyscallRuns(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/syscall.o")
	if err != nil {
		t.Fatal(err)
	}
	var kern *ebpf.Collection
	if haveKernel(t) {
		if kern, err = ebpf.NewCollection(spec.Copy()); err != nil {
			t.Fatalf("kernel load: %v", err)
		}
		defer kern.Close()
	}
	user := []byte("0123456789abcdef0123456789ABCDEF")
	str := []byte("hello, world, hello again\x00")
	uaddr, saddr := uint64(uintptr(unsafe.Pointer(&user[0]))), uint64(uintptr(unsafe.Pointer(&str[0])))
	syms := map[string]uint64{}
	for _, s := range []string{"bpf_prog_test_run_syscall", "bpf_sys_bpf"} {
		if a := kallsyms(s); a != 0 {
			syms[s] = a
		}
	}
	world := &bpfvm.Trace{
		Memory:  []bpfvm.TraceMemory{{Addr: uaddr, Data: user, User: true}, {Addr: saddr, Data: str, User: true}},
		Symbols: syms,
	}
	type run struct {
		prog string
		ctx  []byte
	}
	runs := []run{
		{"ctx_rw", sysArgs(41, 21, 0, 0, "")},
		{"ctx_rw", sysArgs(1<<63, 1<<31, 0, 0, "")},
		{"sys_calls", sysArgs(0, 0, 0, 0, "")},
		{"lookups", sysArgs(0, 4, 0, 0, "bpf_prog_test_run_syscall")},
		{"lookups", sysArgs(0, 4, 0, 0, "task_struct")},
		{"lookups", sysArgs(0, 5, 0, 0, "bpf_attr")},
		{"lookups", sysArgs(0, 12, 0, 0, "bpf_sys_bpf")},
		{"lookups", sysArgs(0, 1, 0, 0, "void")},
		{"lookups", sysArgs(0, 0, 0, 0, "int")},
		{"lookups", sysArgs(0, 4, 0, 0, "no_such_symbol_or_type")},
		{"user_mem", sysArgs(0, 0, uaddr, saddr, "")},
		{"user_mem", sysArgs(0, 0, uaddr+8, saddr+20, "")},
		{"user_mem", sysArgs(0, 0, 0x10, 0x10, "")},
	}
	compared := 0
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		vm, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}})
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		defer vm.Close()
		for i, r := range runs {
			name := fmt.Sprintf("%s/%d %s", e, i, r.prog)
			out := make([]byte, len(r.ctx))
			ret, err := vm.Programs[r.prog].Run(&bpfvm.RunOptions{Context: r.ctx, ContextOut: out, Trace: world})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if kern == nil {
				continue
			}
			kout := make([]byte, len(r.ctx))
			kret, err := kern.Programs[r.prog].Run(&ebpf.RunOptions{Context: r.ctx, ContextOut: kout})
			runtime.KeepAlive(user)
			runtime.KeepAlive(str)
			if err != nil {
				t.Fatalf("%s: kernel: %v", name, err)
			}
			if r.prog == "lookups" && syms[strings.TrimRight(string(r.ctx[sysName:sysName+32]), "\x00")] == 0 {
				// No address the host shows: the kernel's result is
				// its own.
				copy(kout[sysRet:sysRet+4], out[sysRet:sysRet+4])
				copy(kout[sysRes:sysRes+8], out[sysRes:sysRes+8])
			}
			compared++
			if ret != kret || !bytes.Equal(out, kout) {
				t.Errorf("%s: returned %d, kernel %d\n ctx % x\nkernel % x", name, int32(ret), int32(kret), out, kout)
			}
		}
	}
	if kern != nil {
		t.Logf("%d syscall runs agree with the kernel", compared)
	}
}

// TestSyscallRunRules checks the test-run rules of syscall programs, the
// kernel's bpf_prog_test_run_syscall as cilium/ebpf drives it: no packet,
// no repetitions, no flags; a context of at least the bytes the program
// reaches and at most U16_MAX; a ContextOut only with a Context of its
// length.
func TestSyscallRunRules(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/syscall.o")
	if err != nil {
		t.Fatal(err)
	}
	var kern *ebpf.Collection
	if haveKernel(t) {
		if kern, err = ebpf.NewCollection(spec.Copy()); err != nil {
			t.Fatalf("kernel load: %v", err)
		}
		defer kern.Close()
	}
	vm, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	ctx := sysArgs(1, 2, 0, 0, "")
	for _, c := range []struct {
		name string
		opts bpfvm.RunOptions
		ok   bool
	}{
		{"context", bpfvm.RunOptions{Context: ctx}, true},
		{"context out", bpfvm.RunOptions{Context: ctx, ContextOut: make([]byte, len(ctx))}, true},
		{"longer context", bpfvm.RunOptions{Context: make([]byte, 1<<16-1)}, true},
		{"no context", bpfvm.RunOptions{}, false},
		{"short context", bpfvm.RunOptions{Context: ctx[:100]}, false},
		{"context past U16_MAX", bpfvm.RunOptions{Context: make([]byte, 1<<16)}, false},
		{"context out alone", bpfvm.RunOptions{ContextOut: make([]byte, len(ctx))}, false},
		{"context out shorter", bpfvm.RunOptions{Context: ctx, ContextOut: make([]byte, 8)}, false},
		{"packet", bpfvm.RunOptions{Context: ctx, Data: make([]byte, 14)}, false},
		{"repeat", bpfvm.RunOptions{Context: ctx, Repeat: 2}, false},
		{"flags", bpfvm.RunOptions{Context: ctx, Flags: bpfvm.RunOnCPU}, false},
		{"cpu", bpfvm.RunOptions{Context: ctx, CPU: 1}, true},
	} {
		_, err := vm.Programs["ctx_rw"].Run(&c.opts)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
		if kern == nil {
			continue
		}
		ko := ebpf.RunOptions{Data: c.opts.Data, Repeat: c.opts.Repeat, Flags: c.opts.Flags, CPU: c.opts.CPU}
		if c.opts.Context != nil {
			ko.Context = c.opts.Context
		}
		if c.opts.ContextOut != nil {
			ko.ContextOut = c.opts.ContextOut
		}
		if _, kerr := kern.Programs["ctx_rw"].Run(&ko); (kerr == nil) != c.ok {
			t.Errorf("%s: kernel: %v", c.name, kerr)
		}
	}
}
