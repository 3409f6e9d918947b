// Command uretprobe loads cilium/ebpf's uretprobe example, a uretprobe on
// bash's readline reporting each line read with the reader's pid through
// a perf event array, runs it for a recorded session (the registers at
// each return of readline and the bash process's memory the returned
// line is in), and prints the events as the original does.
//
//	go run ./examples/uretprobe
package main

//go:generate clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c bpf/uretprobe.c -o uretprobe.o

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/perf"
	"github.com/bpfvm/bpfvm/progtype"
)

//go:embed uretprobe.o
var object []byte

// event mirrors struct event of bpf/uretprobe.c.
type event struct {
	PID  uint32
	Line [80]byte
}

// session is the recorded world: bash's pid and the lines readline
// returned, each at the address in rax when it returned.
var session = struct {
	task  bpfvm.Task
	lines []struct {
		addr uint64
		text string
	}
}{
	task: bpfvm.Task{PID: 4242, TGID: 4242, Comm: "bash"},
	lines: []struct {
		addr uint64
		text string
	}{
		{0x55d0c0a01000, "ls -l /tmp"},
		{0x55d0c0a02000, "echo hello"},
		{0x55d0c0a03000, "exit"},
	},
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(object), "uretprobe.o")
	if err != nil {
		return err
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		return err
	}
	defer coll.Close()
	rd, err := perf.NewReader(coll.Maps["events"], os.Getpagesize())
	if err != nil {
		return err
	}
	defer rd.Close()

	// Each line is at the start of a page of bash's heap, which the
	// program reads 80 bytes of, as much as its buffer holds.
	var mem []bpfvm.TraceMemory
	for _, l := range session.lines {
		page := make([]byte, 4096)
		copy(page, l.text)
		mem = append(mem, bpfvm.TraceMemory{Addr: l.addr, Data: page, User: true})
	}
	world := &bpfvm.Trace{Task: &session.task, Memory: mem}
	for _, l := range session.lines {
		regs := make([]byte, progtype.PtRegsSize)
		binary.NativeEndian.PutUint64(regs[progtype.PtRegsAX:], l.addr) // readline's return value
		// All on CPU 0: one ring, read in order.
		opts := &bpfvm.RunOptions{Context: regs, Trace: world, Flags: bpfvm.RunOnCPU}
		if _, err := coll.Programs["uretprobe_bash_readline"].Execute(opts); err != nil {
			return err
		}
	}
	for range session.lines {
		rd.SetDeadline(time.Now().Add(time.Second))
		rec, err := rd.Read()
		if err != nil {
			return err
		}
		var e event
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &e); err != nil {
			return fmt.Errorf("parsing perf event: %w", err)
		}
		line, _, _ := bytes.Cut(e.Line[:], []byte{0})
		fmt.Fprintf(w, "/bin/bash:readline return value: pid %d line %s\n", e.PID, line)
	}
	if rd.SetDeadline(time.Now()); !errors.Is(func() error { _, err := rd.Read(); return err }(), os.ErrDeadlineExceeded) {
		return fmt.Errorf("more events than lines")
	}
	return nil
}
