package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/rlimit"
)

// TestKprobePercpu: the first call on each CPU initialises its slot to 1,
// the others add to it.
func TestKprobePercpu(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	if want := "CPU 0: 2 calls\nCPU 1: 3 calls\n"; out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestKprobePercpuKernel: the kernel takes the same object, where bpf()
// is permitted.
func TestKprobePercpuKernel(t *testing.T) {
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Skip("no bpf()")
	}
	spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(object), "kprobe_percpu.o")
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) || errors.Is(err, errors.ErrUnsupported) {
		// No permission, or no bpf() at all (qemu-user's ENOSYS).
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	coll.Close()
}
