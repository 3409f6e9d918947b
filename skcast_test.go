package bpfvm_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/progtype"
)

// TestSocketCastRuns: the bpf_skc_to_* casts of a tp_btf program at
// tcp_probe on the world's kernel sockets, described as bpfvm.Socket
// kernel objects (and a struct proto for the mini sockets' sk_prot), on
// both engines, checked and not: each cast's verdict is the kernel's
// test of the socket's family, type, protocol, state and protocol ops,
// and loads through a cast's result read the socket (srtt_us).
func TestSocketCastRuns(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	tcpProt, err := bpfvm.NewKernelObject(nil, "proto", 0xffffffff80001000)
	if err != nil {
		t.Fatal(err)
	}
	if err := tcpProt.Set("name", "TCP"); err != nil {
		t.Fatal(err)
	}
	udpProt, err := bpfvm.NewKernelObject(nil, "proto", 0xffffffff80002000)
	if err != nil {
		t.Fatal(err)
	}
	if err := udpProt.Set("name", "UDP"); err != nil {
		t.Fatal(err)
	}
	v4 := netip.MustParseAddrPort("10.0.0.1:80")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:80")
	peer4, peer6 := netip.MustParseAddrPort("10.0.0.2:5000"), netip.MustParseAddrPort("[2001:db8::2]:5000")
	const (
		tcp6 = 1 << iota
		tcp
		tw
		req
		udp6
		unix
	)
	cases := []struct {
		name string
		sock bpfvm.Socket
		prot *bpfvm.KernelObject
		want uint64
	}{
		{"tcp4 established", bpfvm.Socket{Protocol: 6, Local: v4, Remote: peer4, TCP: bpfvm.TCPInfo{SrttUs: 8 << 3}}, tcpProt, tcp | 8<<8},
		{"tcp6 established", bpfvm.Socket{Protocol: 6, Local: v6, Remote: peer6, TCP: bpfvm.TCPInfo{SrttUs: 9 << 3}}, tcpProt, tcp6 | tcp | 9<<8},
		{"tcp listener", bpfvm.Socket{Protocol: 6, Local: v4}, tcpProt, tcp},
		{"time-wait", bpfvm.Socket{Protocol: 6, Local: v4, Remote: peer4, State: 6}, tcpProt, tw},
		{"time-wait of another proto", bpfvm.Socket{Protocol: 6, Local: v4, Remote: peer4, State: 6}, udpProt, 0},
		{"time-wait without proto", bpfvm.Socket{Protocol: 6, Local: v4, Remote: peer4, State: 6}, nil, 0},
		{"request", bpfvm.Socket{Protocol: 6, Local: v6, Remote: peer6, State: 12}, tcpProt, req},
		{"udp6", bpfvm.Socket{Protocol: 17, Local: v6}, udpProt, udp6},
		{"udp4", bpfvm.Socket{Protocol: 17, Local: v4}, udpProt, 0},
	}
	unixSock, err := bpfvm.NewKernelObject(nil, "unix_sock", 0xffff888000400000)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		path string
		v    any
	}{{"skc_family", uint16(1)}, {"skc_state", uint8(7)}, {"sk_type", uint16(1)}} {
		if err := unixSock.Set(s.path, s.v); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skip(err)
	}
	var srtt uint32
	if o, err := bpfvm.NewKernelObject(spec, "tcp_sock", 0); err == nil {
		srtt, _ = o.Offset("srtt_us")
	}
	// r0 = one bit a cast that gives the socket back, plus srtt_us>>3
	// through the tcp_sock cast's result << 8.
	src := "r6 = *(u64 *)(r1 +0)\nr7 = 0\n"
	for i, id := range []int{136, 137, 138, 139, 140, 178} {
		src += fmt.Sprintf("r1 = r6\ncall %d\nif r0 != r6 goto +1\nr7 |= %d\n", id, 1<<i)
	}
	src += fmt.Sprintf("r1 = r6\ncall 137\nif r0 == 0 goto out\nr0 = *(u32 *)(r0 +%d)\nr0 >>= 3\nr0 <<= 8\nr7 |= r0\nout: r0 = r7\nexit", srtt)
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	type world struct {
		name string
		sk   *bpfvm.KernelObject
		objs []*bpfvm.KernelObject
		want uint64
	}
	var worlds []world
	for i, c := range cases {
		o, err := c.sock.KernelObject(spec, 0xffff888000100000+uint64(i)<<16)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		objs := []*bpfvm.KernelObject{o, tcpProt, udpProt}
		if c.prot != nil {
			if err := o.Set("skc_prot", c.prot); err != nil {
				t.Fatal(err)
			}
		}
		worlds = append(worlds, world{c.name, o, objs, c.want})
	}
	worlds = append(worlds, world{"unix", unixSock, []*bpfvm.KernelObject{unixSock}, unix})
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			p, err := bpfvm.NewRawProgram("casts", ebpf.Tracing, prog, bpfvm.ProgramOptions{Engine: e, Checks: checks, AttachType: ebpf.AttachTraceRawTp, AttachTo: "tcp_probe", KernelTypes: spec})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range worlds {
				ctx := make([]byte, 8*progtype.MaxTracingArgs)
				binary.LittleEndian.PutUint64(ctx, w.sk.Addr)
				res, err := p.Execute(&bpfvm.RunOptions{Context: ctx, Trace: &bpfvm.Trace{Objects: w.objs}})
				if err != nil || res.R0 != w.want {
					t.Errorf("%s on %v checks %v: %#x, %v; want %#x", w.name, e, checks, res.R0, err, w.want)
				}
			}
			p.Close()
		}
	}
}

// TestSocketCastsTC: a tc program casting its context's socket (the
// kernel's test run gives a zeroed socket of the packet's family, in
// state TCP_CLOSE: no cast takes it) returns what the kernel's test run
// returns, for IPv4 and IPv6 packets, on both engines.
func TestSocketCastsTC(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	// r0 = 1 without a socket; else 2 + a bit per cast giving it back.
	src := "r6 = *(u64 *)(r1 +168)\nr0 = 1\nif r6 == 0 goto out\nr7 = 2\n"
	for i, id := range []int{136, 137, 138, 139, 140, 178, 196} {
		src += fmt.Sprintf("r1 = r6\ncall %d\nif r0 == 0 goto +1\nr7 |= %d\n", id, 4<<i)
	}
	src += "r0 = r7\nout: exit"
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	frames := map[string][]byte{"ipv4": ctxFrame("\x02\x00\x00\x00\x00\x02", 0x0800, 0x45, 64), "ipv6": ctxFrame("\x02\x00\x00\x00\x00\x02", 0x86dd, 0x60, 80)}
	kp := kernelRawProgram(t, ebpf.SchedCLS, prog)
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		p, err := bpfvm.NewRawProgram("casts", ebpf.SchedCLS, prog, bpfvm.ProgramOptions{Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		for name, f := range frames {
			res, err := p.Execute(&bpfvm.RunOptions{Data: f})
			if err != nil {
				t.Fatal(err)
			}
			if kp == nil {
				continue
			}
			ret, err := kp.Run(&ebpf.RunOptions{Data: f})
			if err != nil {
				t.Fatal(err)
			}
			if uint32(res.R0) != ret {
				t.Errorf("%s on %v: %#x, kernel %#x", name, e, res.R0, ret)
			}
		}
		p.Close()
	}
}
