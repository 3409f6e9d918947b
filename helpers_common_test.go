package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// modes runs f in both execution modes: unverified, where checked mode
// validates every access at run time (noVerify), and verified. Helpers
// behave the same in both; the verified mode is skipped for programs the
// verifier does not accept (yet).
func modes(t *testing.T, f func(t *testing.T, noVerify bool)) {
	t.Run("checked", func(t *testing.T) { f(t, true) })
	t.Run("verified", func(t *testing.T) { f(t, false) })
}

// loadHelpers loads a helpers_*.o test object into bpfvm, and into the
// kernel as an oracle where bpf() is permitted (kern is nil otherwise).
func loadHelpers(t *testing.T, noVerify bool, file string, opts bpfvm.CollectionOptions) (vm *bpfvm.Collection, kern *ebpf.Collection) {
	t.Helper()
	return loadVM(t, noVerify, file, opts), kernelCollection(t, file)
}

// loadVM loads a test object into bpfvm only, verified unless noVerify.
func loadVM(t *testing.T, noVerify bool, file string, opts bpfvm.CollectionOptions) *bpfvm.Collection {
	t.Helper()
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	opts.Programs.NoVerify = noVerify
	vm, err := bpfvm.NewCollectionWithOptions(spec, opts)
	if err != nil {
		if !noVerify {
			t.Skipf("not verified: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)
	return vm
}

// kernelCollection loads an object into the running kernel, or returns nil
// (after logging why) where bpf() is not permitted.
func kernelCollection(t *testing.T, file string) *ebpf.Collection {
	t.Helper()
	if os.Getuid() != 0 {
		t.Log("kernel oracle skipped: not root")
		return nil
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Logf("kernel oracle skipped: %v", err)
		return nil
	}
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
			t.Logf("kernel oracle skipped: %v", err)
			return nil
		}
		t.Fatalf("kernel load: %v", err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// runOut is the outcome of one test run.
type runOut struct {
	ret  uint32
	data []byte
}

// run runs a bpfvm program on data with an optional context.
func run(t *testing.T, p *bpfvm.Program, data []byte, ctx any) runOut {
	t.Helper()
	out := make([]byte, len(data)+1024)
	res, err := p.Execute(&bpfvm.RunOptions{Data: data, DataOut: out, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	return runOut{uint32(res.R0), out[:res.DataSize]}
}

// kernelRun runs the kernel's copy of a program the same way; ok is false
// without an oracle.
func kernelRun(t *testing.T, kern *ebpf.Collection, name string, data []byte, ctx any) (runOut, bool) {
	t.Helper()
	if kern == nil {
		return runOut{}, false
	}
	p := kern.Programs[name]
	if p == nil {
		t.Fatalf("kernel: no program %s", name)
	}
	out := make([]byte, len(data)+4096)
	opts := &ebpf.RunOptions{Data: data, DataOut: out, Context: ctx}
	ret, err := p.Run(opts)
	if err != nil {
		t.Fatalf("kernel run: %v", err)
	}
	return runOut{ret, opts.DataOut}, true
}

// checkRun runs name on both and compares with want (and the kernel's
// result with bpfvm's). A nil want.data skips the packet comparison with
// want, not with the kernel.
func checkRun(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, name string, data []byte, ctx any, want runOut) runOut {
	t.Helper()
	p := vm.Programs[name]
	if p == nil {
		t.Fatalf("no program %s", name)
	}
	got := run(t, p, data, ctx)
	if got.ret != want.ret {
		t.Errorf("%s: returned %d (%#x), want %d (%#x)", name, int32(got.ret), got.ret, int32(want.ret), want.ret)
	}
	if want.data != nil && !bytes.Equal(got.data, want.data) {
		t.Errorf("%s: output packet\n got % x\nwant % x", name, got.data, want.data)
	}
	if k, ok := kernelRun(t, kern, name, data, ctx); ok {
		if k.ret != got.ret {
			t.Errorf("%s: kernel returned %d (%#x), bpfvm %d (%#x)", name, int32(k.ret), k.ret, int32(got.ret), got.ret)
		}
		if !bytes.Equal(k.data, got.data) {
			t.Errorf("%s: output packet differs from the kernel's\nbpfvm  % x\nkernel % x", name, got.data, k.data)
		}
	}
	return got
}

// skbCB returns a struct __sk_buff context with cb[0..4] set.
func skbCB(cb ...uint32) []byte {
	ctx := make([]byte, 192)
	for i, v := range cb {
		binary.NativeEndian.PutUint32(ctx[48+4*i:], v)
	}
	return ctx
}

// errno returns a negative errno as a program's 32-bit return value.
func errno(e int32) uint32 { return uint32(-e) }

// with returns a copy of b with the bytes at off replaced by p.
func with(b []byte, off int, p ...byte) []byte {
	c := bytes.Clone(b)
	copy(c[off:], p)
	return c
}
