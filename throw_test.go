package bpfvm_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// BPF exceptions run as in the kernel on both engines: bpf_throw unwinds
// every frame (from static and global functions), the exception callback
// gets the cookie and its result is the program's; without one the cookie
// is. A ring buffer sample held by the caller of a throwing global
// function is discarded.
func TestThrowRuns(t *testing.T) {
	pkt := func(n int, b0 byte) []byte {
		b := bytes.Repeat([]byte{0xaa}, n)
		b[0] = b0
		return b
	}
	cases := []struct {
		prog string
		data []byte
		want uint32
	}{
		{"throw_cb", pkt(60, 0), 7},
		{"throw_cb", pkt(120, 0), 241},
		{"throw_default", pkt(40, 0), 1},
		{"throw_default", pkt(60, 0), 3},
		{"throw_global", pkt(20, 4), 4},
		{"throw_global", pkt(20, 5), 45},
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bool{false, true} {
			opts := bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}}
			if checks {
				opts.Programs.Checks = bpfvm.ChecksOn
			}
			vm := loadVM(t, false, "testdata/throw.o", opts)
			kern := kernelCollection(t, "testdata/throw.o")
			for _, c := range cases {
				checkRun(t, vm, kern, c.prog, c.data, nil, runOut{ret: c.want})
			}
		}
	}
}

// A global function that may throw, called while holding a ring buffer
// sample, is refused as in the kernel; unverified, the throw discards the
// sample on the way out, on both engines.
func TestThrowReleases(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/throw_leak.o")
	if err != nil {
		t.Fatal(err)
	}
	const msg = "bpf_throw would lead to reference leak"
	_, err = bpfvm.NewCollection(spec)
	if err == nil || !strings.Contains(err.Error(), msg) {
		t.Errorf("loaded, or not for the leak: %v", err)
	}
	if haveKernel(t) {
		if _, kerr := ebpf.NewCollection(spec); kerr == nil || !strings.Contains(fmt.Sprintf("%+v", kerr), msg) {
			t.Errorf("kernel: %v", kerr)
		}
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		vm := loadVM(t, true, "testdata/throw_leak.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}})
		p := vm.Programs["throw_ringbuf"]
		for _, c := range []struct {
			b0   byte
			want uint32
		}{{5, 1005}, {4, 2}, {7, 1007}, {6, 2}} {
			if got := run(t, p, []byte{c.b0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil); got.ret != c.want {
				t.Errorf("%s b0 %d: returned %d, want %d", e, c.b0, got.ret, c.want)
			}
		}
		recs, err := bpfvm.RingRecords(vm.Maps["events"])
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2 {
			t.Errorf("%s: %d records, want the 2 submitted", e, len(recs))
		}
	}
}
