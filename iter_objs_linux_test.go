//go:build linux

package bpfvm_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
)

// TestIterObjects runs testdata/iter_objs.o's task_file, tcp and udp
// iterators in the kernel over this process's files and sockets and in
// bpfvm over a world describing the same objects (read from /proc): the
// lines for the files and sockets the test made must be the same.
func TestIterObjects(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	spec, err := loader.LoadCollectionSpec("testdata/iter_objs.o")
	if err != nil {
		t.Fatal(err)
	}
	// The test's own objects: files of three kinds, a TCP listener with
	// a connection, a UDP socket.
	f1, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := os.OpenFile(t.TempDir()+"/f", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	f2.WriteString("hello")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	fds := []uint32{uint32(f1.Fd()), uint32(f2.Fd()), uint32(pr.Fd()), uint32(pw.Fd())}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	uc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	ap := func(a net.Addr) netip.AddrPort { return netip.MustParseAddrPort(a.String()) }
	socks := []bpfvm.Socket{
		{Protocol: 6, Local: ap(ln.Addr()), State: 10},
		{Protocol: 6, Local: ap(cl.LocalAddr()), Remote: ap(cl.RemoteAddr())},
		{Protocol: 6, Local: ap(sv.LocalAddr()), Remote: ap(sv.RemoteAddr())},
		{Protocol: 17, Local: ap(uc.LocalAddr()), State: 7},
	}
	var ports []string
	for _, s := range socks {
		ports = append(ports, fmt.Sprint(s.Local.Port()))
	}

	var kt *btf.Spec // the default CO-RE target's
	pid := os.Getpid()
	addr := uint64(0xffff888010000000)
	next := func() uint64 { addr += 1 << 16; return addr }
	obj := func(name string) *bpfvm.KernelObject {
		o, err := bpfvm.NewKernelObject(kt, name, next())
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	set := func(o *bpfvm.KernelObject, path string, v any) {
		if err := o.Set(path, v); err != nil {
			t.Fatal(err)
		}
	}
	task := obj("task_struct")
	set(task, "pid", uint32(pid))
	set(task, "tgid", uint32(pid))
	var world bpfvm.Trace
	var files []bpfvm.TaskFile
	for _, fd := range fds {
		info := fdinfo(t, fd)
		file, inode := obj("file"), obj("inode")
		// fdinfo's flags add O_CLOEXEC from the fd table; the file's
		// own f_flags do not hold it.
		set(file, "f_flags", uint32(info["flags"])&^0o2000000)
		set(file, "f_pos", info["pos"])
		set(file, "f_inode", inode)
		set(inode, "i_ino", info["ino"])
		world.Objects = append(world.Objects, inode)
		files = append(files, bpfvm.TaskFile{Task: task, FD: fd, File: file})
	}
	var isocks []bpfvm.IterSocket
	for i := range socks {
		o, err := socks[i].KernelObject(kt, next())
		if err != nil {
			t.Fatal(err)
		}
		isocks = append(isocks, bpfvm.IterSocket{Sock: o, UID: uint32(os.Getuid())})
	}

	mine := func(prog, line string) bool {
		w := strings.Fields(line)
		if prog == "dump_files" {
			fd, _ := strconv.ParseUint(w[2], 10, 32)
			return len(w) == 6 && w[1] == strconv.Itoa(pid) && slices.Contains(fds, uint32(fd))
		}
		return len(w) == 6 && slices.Contains(ports, w[3])
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	if err := coll.Maps["target"].Put(uint32(0), uint32(pid)); err != nil {
		t.Fatal(err)
	}
	vm := map[string][]string{}
	for _, prog := range []string{"dump_files", "dump_tcp", "dump_udp"} {
		r, err := coll.Programs[prog].Iterate(&bpfvm.IterOptions{Files: files, Sockets: isocks, Trace: &world})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		for l := range strings.Lines(string(out)) {
			if mine(prog, l) {
				vm[prog] = append(vm[prog], strings.TrimSpace(l))
			}
		}
		slices.Sort(vm[prog])
	}
	if len(vm["dump_files"]) != len(fds) || len(vm["dump_tcp"]) != 3 || len(vm["dump_udp"]) != 1 {
		t.Errorf("bpfvm lines: %q", vm)
	}

	if !haveKernel(t) {
		return
	}
	kc, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("kernel: %v", err)
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	defer kc.Close()
	if err := kc.Maps["target"].Put(uint32(0), uint32(pid)); err != nil {
		t.Fatal(err)
	}
	agree := 0
	for _, prog := range []string{"dump_files", "dump_tcp", "dump_udp"} {
		it, err := link.AttachIter(link.IterOptions{Program: kc.Programs[prog]})
		if errors.Is(err, os.ErrPermission) {
			t.Logf("kernel attach %s: %v", prog, err)
			continue
		}
		if err != nil {
			t.Fatalf("kernel attach %s: %v", prog, err)
		}
		out, _ := readIter(t, it)
		it.Close()
		var k []string
		for l := range strings.Lines(string(out)) {
			if mine(prog, l) {
				k = append(k, strings.TrimSpace(l))
			}
		}
		slices.Sort(k)
		if !slices.Equal(k, vm[prog]) {
			t.Errorf("%s: kernel %q, bpfvm %q", prog, k, vm[prog])
			continue
		}
		agree += len(k)
	}
	t.Logf("%d lines agree with the kernel", agree)
}

// fdinfo reads /proc/self/fdinfo/fd: pos, flags (octal) and ino.
func fdinfo(t *testing.T, fd uint32) map[string]uint64 {
	f, err := os.Open(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		base := 10
		if k == "flags" {
			base = 8
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), base, 64); err == nil {
			m[k] = n
		}
	}
	return m
}
