// Command kprobe_percpu loads cilium/ebpf's kprobe_percpu example, a kprobe
// on sys_execve counting calls per CPU in a per-CPU array, runs it for a
// recorded sequence of execs on several CPUs, and prints the counts the
// map holds per CPU, as the original prints them once a second.
//
//	go run ./examples/kprobe_percpu
package main

//go:generate clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c bpf/kprobe_percpu.c -o kprobe_percpu.o

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

//go:embed kprobe_percpu.o
var object []byte

// execs are the recorded calls of sys_execve: the CPU each ran on and the
// task that called it.
var execs = []struct {
	cpu  uint32
	task bpfvm.Task
}{
	{0, bpfvm.Task{PID: 100, TGID: 100, Comm: "bash"}},
	{1, bpfvm.Task{PID: 101, TGID: 101, Comm: "make"}},
	{0, bpfvm.Task{PID: 102, TGID: 102, Comm: "cc"}},
	{1, bpfvm.Task{PID: 103, TGID: 103, Comm: "ld"}},
	{1, bpfvm.Task{PID: 104, TGID: 104, Comm: "ls"}},
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(object), "kprobe_percpu.o")
	if err != nil {
		return err
	}
	// Two CPUs whatever the host has, so that the output is the same
	// everywhere.
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: 2})
	if err != nil {
		return err
	}
	defer coll.Close()
	prog := coll.Programs["kprobe_execve"]
	regs := make([]byte, 168) // struct pt_regs: the program reads none of it
	for _, e := range execs {
		if _, err := prog.Execute(&bpfvm.RunOptions{Context: regs, Flags: bpfvm.RunOnCPU, CPU: e.cpu, Trace: &bpfvm.Trace{Task: &e.task}}); err != nil {
			return fmt.Errorf("exec by %s: %w", e.task.Comm, err)
		}
	}
	var counts []uint64
	if err := coll.Maps["kprobe_map"].Lookup(uint32(0), &counts); err != nil {
		return err
	}
	for cpu, n := range counts {
		fmt.Fprintf(w, "CPU %d: %d calls\n", cpu, n)
	}
	return nil
}
