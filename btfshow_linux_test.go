//go:build linux

package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
)

// btfShowData is the object the cases show, typed as each case's type.
var btfShowData = [64]byte{
	0x45, 0x00, 0x00, 0x54, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x01,
	0x0a, 0x00, 0x00, 0x02, 'h', 'e', 'l', 'l', 'o', 0, 'x', 'y', 0, 0, 0, 0,
	0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 2, 0, 0, 0, 0, 0, 0, 0,
	0x0a, 0x00, 0x1f, 0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

// TestBTFShowKernel: bpf_seq_printf_btf and bpf_snprintf_btf of an
// iterator show the program's own bytes as kernel types exactly as the
// kernel does (btf_type_snprintf_show), in every flag combination: an
// iter/task program shows them once, in the kernel and in bpfvm, and the
// outputs are compared byte for byte.
func TestBTFShowKernel(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skip(err)
	}
	id := func(name string) btf.TypeID {
		ts, err := spec.AnyTypesByName(name)
		if err != nil || len(ts) == 0 {
			t.Fatalf("%s: %v", name, err)
		}
		i, err := spec.TypeID(ts[0])
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	const (
		compact = 1
		noname  = 2
		ptrRaw  = 4
		zero    = 8
	)
	cases := []struct {
		typ   string
		off   int
		flags int
	}{
		{"ethhdr", 0, 0}, {"ethhdr", 20, 0}, {"iphdr", 0, 0}, {"iphdr", 0, compact}, {"iphdr", 0, noname},
		{"iphdr", 0, compact | noname}, {"iphdr", 0, zero}, {"in6_addr", 16, 0}, {"in6_addr", 16, compact},
		{"list_head", 32, ptrRaw}, {"callback_head", 32, ptrRaw | compact}, {"sockaddr_in6", 24, 0},
		{"sockaddr_in6", 36, 0}, {"bpf_map_type", 40, 0}, {"bpf_map_type", 40, compact}, {"in6_addr", 48, zero | compact},
	}
	// Stack: the object at fp-128, struct btf_ptr at fp-144, an
	// snprintf buffer at fp-272 (128 bytes), its return at fp-280.
	var src strings.Builder
	src.WriteString("r6 = *(u64 *)(r1 +0)\nr7 = *(u64 *)(r1 +8)\nif r7 == 0 goto out\nr2 = *(u64 *)(r6 +16)\nif r2 != 0 goto out\nr6 = *(u64 *)(r6 +0)\n")
	for i := 0; i < 64; i += 8 {
		fmt.Fprintf(&src, "r1 = %#x ll\n*(u64 *)(r10 %d) = r1\n", binary.LittleEndian.Uint64(btfShowData[i:]), -128+i)
	}
	ptr := func(off int, typ btf.TypeID) string {
		return fmt.Sprintf("r1 = r10\nr1 += %d\n*(u64 *)(r10 -144) = r1\nr1 = %d\n*(u32 *)(r10 -136) = r1\nr1 = 0\n*(u32 *)(r10 -132) = r1\n", -128+off, typ)
	}
	for _, c := range cases {
		src.WriteString(ptr(c.off, id(c.typ)))
		fmt.Fprintf(&src, "r1 = r6\nr2 = r10\nr2 += -144\nr3 = 16\nr4 = %d\ncall 150\n", c.flags)
	}
	// snprintf_btf of iphdr into 48 bytes (cut), then the buffer and
	// its return.
	src.WriteString("r1 = 0\n")
	for off := -280; off < -144; off += 8 {
		fmt.Fprintf(&src, "*(u64 *)(r10 %d) = r1\n", off)
	}
	src.WriteString(ptr(0, id("iphdr")))
	src.WriteString("r1 = r10\nr1 += -272\nr2 = 48\nr3 = r10\nr3 += -144\nr4 = 16\nr5 = 0\ncall 149\n*(u64 *)(r10 -280) = r0\n")
	src.WriteString("r1 = r6\nr2 = r10\nr2 += -280\nr3 = 136\ncall 127\n")
	src.WriteString("out: r0 = 0\nexit")
	prog, err := isa.Assemble(src.String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := bpfvm.NewRawProgram("show", ebpf.Tracing, prog, bpfvm.ProgramOptions{AttachType: ebpf.AttachTraceIter, AttachTo: "task"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rd, err := p.Iterate(&bpfvm.IterOptions{Tasks: []bpfvm.Task{{PID: 1, TGID: 1, Comm: "init"}}})
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := io.ReadAll(rd)
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Skip("no bpf()")
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(prog)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task", Instructions: kinsns, License: "GPL"})
	if errors.Is(err, os.ErrPermission) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	defer kp.Close()
	it, err := link.AttachIter(link.IterOptions{Program: kp})
	if err != nil {
		t.Skipf("kernel attach: %v", err)
	}
	defer it.Close()
	theirs, err := readIter(t, it)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, theirs) {
		t.Errorf("bpfvm:\n%s\nkernel:\n%s", ours, theirs)
		ol, kl := strings.Split(string(ours), "\n"), strings.Split(string(theirs), "\n")
		for i := range min(len(ol), len(kl)) {
			if ol[i] != kl[i] {
				t.Errorf("first difference, line %d: %q, kernel %q", i+1, ol[i], kl[i])
				break
			}
		}
	} else {
		t.Logf("%d bytes alike:\n%s", len(ours), ours)
	}
}
