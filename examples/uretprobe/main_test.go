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

// TestURetprobe: each line readline returned, read from the task's user
// memory at the returned address, with the task's pid.
func TestURetprobe(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := `/bin/bash:readline return value: pid 4242 line ls -l /tmp
/bin/bash:readline return value: pid 4242 line echo hello
/bin/bash:readline return value: pid 4242 line exit
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestURetprobeKernel: the kernel takes the same object, where bpf() is
// permitted.
func TestURetprobeKernel(t *testing.T) {
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Skip("no bpf()")
	}
	spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(object), "uretprobe.o")
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
