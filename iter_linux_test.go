//go:build linux

package bpfvm_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// readIter reads one pass of the kernel iterator it: what its program
// printed, and the read's error.
func readIter(t *testing.T, it *link.Iter) ([]byte, error) {
	t.Helper()
	rd, err := it.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// kernelIterTasks runs iter.o in the kernel: its read_user gives the
// error bpfvm gives without the memory, and its task walk has the shape
// of bpfvm's output (TestIterTasks).
func kernelIterTasks(t *testing.T, spec *ebpf.CollectionSpec) {
	kc, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("kernel: %v", err)
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	defer kc.Close()
	// The kernel's read_user reads this process's memory at 0x10000,
	// which is not mapped: the error bpfvm gives without the memory.
	if ru, err := link.AttachIter(link.IterOptions{Program: kc.Programs["read_user"]}); err == nil {
		out, _ := readIter(t, ru)
		ru.Close()
		if string(out) != "error -14\n" {
			t.Errorf("kernel read_user: %q, want %q", out, "error -14\n")
		}
	}
	it, err := link.AttachIter(link.IterOptions{Program: kc.Programs["dump_task"]})
	if err != nil {
		t.Skipf("kernel attach: %v", err)
	}
	defer it.Close()
	out, err := readIter(t, it)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 3 || lines[0] != "tgid pid comm" || lines[len(lines)-1] != fmt.Sprintf("last %d", len(lines)-3) {
		t.Errorf("kernel output of another shape (%d lines, last %q):\n%.300s", len(lines), lines[len(lines)-1], out)
	}
	var tgid, pid int
	var comm string
	if _, err := fmt.Sscanf(lines[1], "%d %d %s", &tgid, &pid, &comm); err != nil {
		t.Errorf("kernel's first task %q: %v", lines[1], err)
	}
}
