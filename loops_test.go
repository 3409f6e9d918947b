package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// loopsObject is the loop corpus (testdata/loops.c).
const loopsObject = "testdata/loops.o"

// loopsSpec returns the loop corpus with only the named programs (all but
// the bad_* ones when names is empty).
func loopsSpec(t testing.TB, names ...string) *ebpf.CollectionSpec {
	t.Helper()
	spec, err := loader.LoadCollectionSpec(loopsObject)
	if err != nil {
		t.Fatal(err)
	}
	for name := range spec.Programs {
		keep := len(names) == 0 && !strings.HasPrefix(name, "bad_")
		for _, n := range names {
			keep = keep || n == name
		}
		if !keep {
			delete(spec.Programs, name)
		}
	}
	return spec
}

// loopsKernel loads the loop corpus into the kernel, or returns nil where
// bpf() is not permitted.
func loopsKernel(t testing.TB, spec *ebpf.CollectionSpec) *ebpf.Collection {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Log("kernel oracle skipped: not permitted")
		return nil
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

// loopsPacket is an XDP test packet: an Ethernet header, then struct args
// of loops.c with n set.
func loopsPacket(n uint32) []byte {
	pkt := make([]byte, 64)
	binary.LittleEndian.PutUint32(pkt[14:], n)
	return pkt
}

// engines loads spec on each engine.
func loopEngines(t testing.TB, spec *ebpf.CollectionSpec, opts bpfvm.ProgramOptions) map[string]*bpfvm.Collection {
	t.Helper()
	out := map[string]*bpfvm.Collection{}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		opts.Engine = e
		c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		out[e.String()] = c
	}
	return out
}

// Every terminating loop of the corpus gives the kernel's return value and
// output packet on both engines, verified and unverified, for several trip
// counts.
func TestLoopsAgainstKernel(t *testing.T) {
	spec := loopsSpec(t)
	delete(spec.Programs, "forever") // timed: see TestTimedMayGoto
	kern := loopsKernel(t, spec)
	for _, noVerify := range []bool{false, true} {
		engines := loopEngines(t, spec, bpfvm.ProgramOptions{NoVerify: noVerify})
		for _, name := range sortedNames(spec.Programs) {
			ns := []uint32{0, 1, 2, 7, 64, 1000, 100_000}
			if !strings.HasPrefix(name, "cond_break") {
				// Past BPF_MAX_LOOPS: -E2BIG at once from bpf_loop and
				// bpf_iter_num_new (the may_goto budget is timed).
				ns = append(ns, 1<<23+1)
			}
			for _, n := range ns {
				data := loopsPacket(n)
				var want *runOut
				if k, ok := kernelRun(t, kern, name, data, nil); ok {
					want = &k
				}
				for ename, c := range engines {
					got := run(t, c.Programs[name], data, nil)
					if want == nil {
						want = &got
						continue
					}
					if got.ret != want.ret || !bytes.Equal(got.data, want.data) {
						t.Errorf("%s n=%d %s noVerify=%v: got %d % x, want (kernel) %d % x", name, n, ename, noVerify, got.ret, got.data[14:30], want.ret, want.data[14:30])
					}
				}
			}
		}
	}
}

// The corpus programs that misuse iterators are rejected with the kernel's
// messages.
func TestLoopsRejected(t *testing.T) {
	for name, msg := range map[string]string{
		"bad_iter_leak":       "Unreleased reference id=",
		"bad_iter_uninit":     "expected an initialized iter_num as arg #0",
		"bad_iter_deref_null": "R0 invalid mem access 'scalar'",
	} {
		_, err := bpfvm.NewCollection(loopsSpec(t, name))
		var ve *bpfvm.VerifierError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want a verifier error with %q", name, err, msg)
		}
	}
}

func sortedNames[V any](m map[string]V) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if names[j] < names[i] {
				names[i], names[j] = names[j], names[i]
			}
		}
	}
	return names
}

// Unprivileged loads may not call kernel functions, as in the kernel.
func TestLoopsUnprivileged(t *testing.T) {
	_, err := bpfvm.NewCollectionWithOptions(loopsSpec(t, "bad_iter_leak"), bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Unprivileged: true}})
	if err == nil || !strings.Contains(err.Error(), "calling kernel function bpf_iter_num_new is not allowed") {
		t.Errorf("unprivileged load: %v", err)
	}
}
