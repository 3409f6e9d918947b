package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// TestNetworkHeaderDataOut compares the output packet of the types whose
// programs see the packet from its network header with the kernel's test
// run, which gives back the frame with the link header it took off.
func TestNetworkHeaderDataOut(t *testing.T) {
	frame := ctxFrame("\x02\x00\x00\x00\x00\x02", 0x0800, 0x45, 64)
	insns, err := isa.Assemble("r0 = 1\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []ebpf.ProgramType{ebpf.SocketFilter, ebpf.CGroupSKB, ebpf.LWTIn, ebpf.LWTOut, ebpf.LWTXmit} {
		for _, opts := range []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}} {
			p, err := bpfvm.NewRawProgram("out", typ, insns, opts)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]byte, 256)
			res, err := p.Execute(&bpfvm.RunOptions{Data: frame, DataOut: out})
			p.Close()
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			got := out[:res.DataSize]
			kp := kernelRawProgram(t, typ, insns)
			if kp == nil {
				continue
			}
			kout := make([]byte, 256)
			ko := &ebpf.RunOptions{Data: frame, DataOut: kout}
			if _, err := kp.Run(ko); err != nil {
				t.Fatalf("%s: kernel: %v", typ, err)
			}
			if !bytes.Equal(got, ko.DataOut) {
				t.Errorf("%s: output packet\nbpfvm  % x\nkernel % x", typ, got, ko.DataOut)
			}
		}
	}
}

// skLookupCtx builds a struct bpf_sk_lookup input.
func skLookupCtx(family, protocol uint32, remote4, local4 uint32, remote6, local6 [4]uint32, rport uint16, lport uint32) []byte {
	b := make([]byte, 72)
	le := binary.LittleEndian
	le.PutUint32(b[8:], family)
	le.PutUint32(b[12:], protocol)
	le.PutUint32(b[16:], remote4)
	for i, v := range remote6 {
		le.PutUint32(b[20+4*i:], v)
	}
	binary.BigEndian.PutUint16(b[36:], rport)
	le.PutUint32(b[40:], local4)
	for i, v := range local6 {
		le.PutUint32(b[44+4*i:], v)
	}
	le.PutUint32(b[60:], lport)
	return b
}

// TestSKLookupRun reads every sk_lookup field, bit by bit (its programs
// return 0 or 1), through bpfvm's test run and the kernel's
// BPF_PROG_TEST_RUN on the same context inputs, valid and refused, on both
// engines, and compares the results, errors and context outputs.
func TestSKLookupRun(t *testing.T) {
	v6a, v6b := [4]uint32{0x20010db8, 1, 2, 3}, [4]uint32{0x20010db8, 4, 5, 6}
	with := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	v4 := skLookupCtx(2, 6, 0x0100000a, 0x0200000a, v6a, v6b, 0x1234, 80)
	inputs := map[string][]byte{
		"v4":             v4,
		"v6":             skLookupCtx(10, 17, 0x0100000a, 0x0200000a, v6a, v6b, 0xfffe, 65535),
		"family high":    with(v4, 8, 0x10002),
		"protocol high":  with(v4, 12, 0xabcd0011),
		"port padding":   with(v4, 36, 0xffff3412),
		"short":          v4[:40],
		"bad family":     with(v4, 8, 1),
		"bad local_port": with(v4, 60, 65536),
		"bad sk":         with(v4, 0, 1),
		"bad ifindex":    with(v4, 64, 1),
		"bad tail":       with(v4, 68, 1),
	}
	engines := []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {NoVerify: true}}
	var compared, agreed int
	for _, f := range progtype.SKLookup.Fields {
		if !f.Read || f.Kind != progtype.Scalar {
			continue
		}
		for size := uint32(1); size <= f.Size; size *= 2 {
			if size != f.Size && !f.Narrow {
				continue
			}
			for off := f.Offset; off+size <= f.Offset+f.Size; off += size {
				for bit := 0; bit < int(size)*8; bit++ {
					src := fmt.Sprintf("r0 = *(u%d *)(r1 +%d)\nr0 >>= %d\nr0 &= 1\nexit", size*8, off, bit)
					insns, err := isa.Assemble(src)
					if err != nil {
						t.Fatal(err)
					}
					var ours []*bpfvm.Program
					for _, opts := range engines {
						opts.AttachType = ebpf.AttachSkLookup
						p, err := bpfvm.NewRawProgram("lookup", ebpf.SkLookup, insns, opts)
						if err != nil {
							t.Fatalf("%q: %v", src, err)
						}
						defer p.Close()
						ours = append(ours, p)
					}
					kp := kernelRawProgramAttach(t, ebpf.SkLookup, ebpf.AttachSkLookup, insns)
					for iname, in := range inputs {
						id := fmt.Sprintf("%s u%d@%d bit %d, %s", f.Name, size*8, off, bit, iname)
						out := make([]byte, 72)
						var got uint32
						var gotErr error
						for i, p := range ours {
							r, err := p.Run(&bpfvm.RunOptions{Context: in, ContextOut: out})
							if i == 0 {
								got, gotErr = r, err
							} else if r != got || (err == nil) != (gotErr == nil) {
								t.Errorf("%s: engine %d: %d, %v; engine 0: %d, %v", id, i, r, err, got, gotErr)
							}
						}
						if kp == nil {
							continue
						}
						kout := make([]byte, 72)
						kret, kerr := kp.Run(&ebpf.RunOptions{Context: in, ContextOut: kout})
						compared++
						switch {
						case (kerr == nil) != (gotErr == nil):
							t.Errorf("%s: bpfvm %d, %v; kernel %d, %v", id, got, gotErr, kret, kerr)
						case kerr == nil && kret != got:
							t.Errorf("%s: bpfvm %d, kernel %d", id, got, kret)
						case kerr == nil && !bytes.Equal(out, kout):
							t.Errorf("%s: context out\nbpfvm  % x\nkernel % x", id, out, kout)
						default:
							agreed++
						}
					}
				}
			}
		}
	}
	// The socket: none selected yet, NULL.
	insns, _ := isa.Assemble("r2 = *(u64 *)(r1 +0)\nr0 = 0\nif r2 != 0 goto out\nr0 = 1\nout: exit")
	for _, opts := range engines {
		opts.AttachType = ebpf.AttachSkLookup
		p, err := bpfvm.NewRawProgram("lookup", ebpf.SkLookup, insns, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(&bpfvm.RunOptions{Context: v4})
		p.Close()
		if err != nil || got != 1 {
			t.Errorf("sk: %d, %v; want NULL (1)", got, err)
		}
	}
	if kp := kernelRawProgramAttach(t, ebpf.SkLookup, ebpf.AttachSkLookup, insns); kp != nil {
		compared++
		if k, err := kp.Run(&ebpf.RunOptions{Context: v4}); err != nil || k != 1 {
			t.Errorf("sk: kernel %d, %v", k, err)
		} else {
			agreed++
		}
	}
	// Runs the kernel refuses whatever the program: no context, a packet.
	insns, _ = isa.Assemble("r0 = 1\nexit")
	p, err := bpfvm.NewRawProgram("lookup", ebpf.SkLookup, insns, bpfvm.ProgramOptions{AttachType: ebpf.AttachSkLookup})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	kp := kernelRawProgramAttach(t, ebpf.SkLookup, ebpf.AttachSkLookup, insns)
	for name, ro := range map[string]func() (*bpfvm.RunOptions, *ebpf.RunOptions){
		"no context": func() (*bpfvm.RunOptions, *ebpf.RunOptions) { return &bpfvm.RunOptions{}, &ebpf.RunOptions{} },
		"packet": func() (*bpfvm.RunOptions, *ebpf.RunOptions) {
			d := make([]byte, 64)
			return &bpfvm.RunOptions{Data: d, Context: v4}, &ebpf.RunOptions{Data: d, Context: v4}
		},
	} {
		o, k := ro()
		if _, err := p.Run(o); err == nil {
			t.Errorf("%s: bpfvm runs it", name)
		}
		if kp != nil {
			compared++
			if _, err := kp.Run(k); err == nil {
				t.Errorf("%s: the kernel runs it", name)
			} else {
				agreed++
			}
		}
	}
	if compared == 0 {
		t.Skip("no kernel to compare with")
	}
	t.Logf("sk_lookup test runs: %d/%d agree with the kernel", agreed, compared)
}

// TestProgTypeContextInputs runs the types the kernel has no test run for
// with the context inputs bpfvm documents for them (progtype): fields from
// the input, lengths from the packet, writable fields in the context
// output, inputs outside the input fields refused; on both engines and in
// checked mode.
func TestProgTypeContextInputs(t *testing.T) {
	u32 := func(size int, kv ...uint32) []byte {
		b := make([]byte, size)
		for i := 0; i < len(kv); i += 2 {
			binary.LittleEndian.PutUint32(b[kv[i]:], kv[i+1])
		}
		return b
	}
	pkt := []byte{0xa5, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []struct {
		name   string
		typ    ebpf.ProgramType
		attach ebpf.AttachType
		asm    string
		data   []byte
		ctx    []byte
		ret    uint32
		// out is a u32 of the context output and its value.
		outOff, out uint32
		err         bool
	}{
		{name: "sk_skb len", typ: ebpf.SkSKB, asm: "r0 = *(u32 *)(r1 +0)\nexit", data: pkt, ret: 8},
		{name: "sk_skb remote_port", typ: ebpf.SkSKB, asm: "r0 = *(u32 *)(r1 +132)\nexit", data: pkt, ctx: u32(192, 132, 0x5000), ret: 0x5000},
		{name: "sk_skb priority", typ: ebpf.SkSKB, asm: "r2 = *(u32 *)(r1 +96)\n*(u32 *)(r1 +32) = r2\nr0 = 0\nexit", data: pkt, ctx: u32(192, 96, 0x0100007f), outOff: 32, out: 0x0100007f},
		{name: "sk_skb data", typ: ebpf.SkSKB, asm: "r2 = *(u32 *)(r1 +76)\nr3 = *(u32 *)(r1 +80)\nr4 = r2\nr4 += 1\nr0 = 0\nif r4 > r3 goto out\nr0 = *(u8 *)(r2 +0)\nout: exit", data: pkt, ret: 0xa5},
		{name: "sk_skb bad len", typ: ebpf.SkSKB, asm: "r0 = 0\nexit", data: pkt, ctx: u32(192, 0, 1), err: true},
		{name: "sk_msg size", typ: ebpf.SkMsg, asm: "r0 = *(u32 *)(r1 +68)\nexit", data: pkt, ret: 8},
		{name: "sk_msg family", typ: ebpf.SkMsg, asm: "r0 = *(u32 *)(r1 +16)\nexit", ctx: u32(80, 16, 10), ret: 10},
		{name: "sk_msg data", typ: ebpf.SkMsg, asm: "r2 = *(u64 *)(r1 +0)\nr3 = *(u64 *)(r1 +8)\nr0 = r3\nr0 -= r2\nexit", data: pkt, ret: 8},
		{name: "sk_msg socket family", typ: ebpf.SkMsg, asm: "r2 = *(u64 *)(r1 +72)\nr0 = *(u32 *)(r2 +4)\nexit", ctx: u32(80, 16, 10), ret: 10},
		{name: "sk_msg socket ports", typ: ebpf.SkMsg, asm: "r2 = *(u64 *)(r1 +72)\nr0 = *(u16 *)(r2 +48)\nr3 = *(u32 *)(r2 +44)\nr3 <<= 16\nr0 |= r3\nexit", ctx: u32(80, 60, 0x50000000, 64, 8080), ret: 8080<<16 | 0x5000},
		{name: "sk_msg socket source", typ: ebpf.SkMsg, asm: "r2 = *(u64 *)(r1 +72)\nr0 = *(u32 *)(r2 +24)\nexit", ctx: u32(80, 24, 0x0100007f), ret: 0x0100007f},
		{name: "sk_msg socket tcp", typ: ebpf.SkMsg, asm: "r2 = *(u64 *)(r1 +72)\nr0 = *(u32 *)(r2 +12)\nr3 = *(u32 *)(r2 +72)\nr3 <<= 8\nr0 |= r3\nexit", ret: 1<<8 | 6},
		{name: "sock_ops no socket", typ: ebpf.SockOps, asm: "r2 = *(u64 *)(r1 +184)\nr0 = 1\nif r2 == 0 goto out\nr0 = 0\nout: exit", ret: 1},
		{name: "sk_reuseport no migrating socket", typ: ebpf.SkReuseport, asm: "r2 = *(u64 *)(r1 +48)\nr0 = 1\nif r2 == 0 goto out\nr0 = 0\nout: exit", ret: 1},
		{name: "sk_msg bad size", typ: ebpf.SkMsg, asm: "r0 = 0\nexit", ctx: u32(80, 68, 1), err: true},
		{name: "sock_ops reply", typ: ebpf.SockOps, asm: "r2 = *(u32 *)(r1 +8)\n*(u32 *)(r1 +4) = r2\nr0 = 1\nexit", ctx: u32(224, 0, 4, 8, 77), ret: 1, outOff: 4, out: 77},
		{name: "sock_ops skb_len", typ: ebpf.SockOps, asm: "r2 = *(u32 *)(r1 +208)\n*(u32 *)(r1 +164) = r2\nr0 = 1\nexit", data: pkt, ret: 1, outOff: 164, out: 8},
		{name: "cgroup_sock mark", typ: ebpf.CGroupSock, attach: ebpf.AttachCGroupInetSockCreate, asm: "r2 = *(u32 *)(r1 +12)\n*(u32 *)(r1 +16) = r2\nr0 = 1\nexit", ctx: u32(80, 4, 2, 12, 6), ret: 1, outOff: 16, out: 6},
		{name: "cgroup_sock post_bind port", typ: ebpf.CGroupSock, attach: ebpf.AttachCGroupInet4PostBind, asm: "r0 = *(u32 *)(r1 +44)\nr0 &= 1\nexit", ctx: u32(80, 44, 8081), ret: 1},
		// user_port is a u16 behind: a store keeps two bytes.
		{name: "connect4 port", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r2 = *(u32 *)(r1 +4)\n*(u32 *)(r1 +24) = r2\nr0 = 1\nexit", ctx: u32(72, 0, 2, 4, 0x0100007f), ret: 1, outOff: 24, out: 0x7f},
		{name: "connect4 user_ip4", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r2 = *(u32 *)(r1 +24)\n*(u32 *)(r1 +4) = r2\nr0 = 1\nexit", ctx: u32(72, 0, 2, 24, 0x5000), ret: 1, outOff: 4, out: 0x5000},
		// and a u16 load of the field's high half reads it, as the
		// kernel's conversion does.
		{name: "connect4 port high half", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r2 = *(u16 *)(r1 +26)\n*(u32 *)(r1 +4) = r2\nr0 = 1\nexit", ctx: u32(72, 0, 2, 24, 0x5000), ret: 1, outOff: 4, out: 0x5000},
		// bpf_set_retval sets what bpf_get_retval reads back in the run
		// (0 at its start): -13 (EACCES) into user_ip4.
		{name: "connect4 get_retval at start", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r6 = r1\ncall bpf_get_retval\n*(u32 *)(r6 +4) = r0\nr0 = 1\nexit", ctx: u32(72, 0, 2, 4, 7), ret: 1, outOff: 4, out: 0},
		{name: "connect4 set_retval", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r6 = r1\nr1 = -13\ncall bpf_set_retval\nr7 = r0\ncall bpf_get_retval\nr0 += r7\n*(u32 *)(r6 +4) = r0\nr0 = 1\nexit", ctx: u32(72, 0, 2), ret: 1, outOff: 4, out: 0xfffffff3},
		{name: "connect4 port input truncated", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r2 = *(u32 *)(r1 +24)\n*(u32 *)(r1 +4) = r2\nr0 = 1\nexit", ctx: u32(72, 0, 2, 24, 0x12345000), ret: 1, outOff: 4, out: 0x5000},
		{name: "sk_reuseport eth_protocol high half", typ: ebpf.SkReuseport, asm: "r0 = *(u16 *)(r1 +22)\nexit", ctx: u32(56, 20, 0xdd86), ret: 0xdd86},
		{name: "sendmsg6 source", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupUDP6Sendmsg, asm: "r2 = 7\n*(u64 *)(r1 +48) = r2\nr0 = 1\nexit", ctx: u32(72, 0, 10), ret: 1, outOff: 48, out: 7},
		{name: "getpeername6 address", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCgroupInet6GetPeername, asm: "r2 = *(u64 *)(r1 +8)\n*(u64 *)(r1 +16) = r2\nr0 = 1\nexit", ctx: u32(72, 8, 0x20010db8), ret: 1, outOff: 16, out: 0x20010db8},
		{name: "connect6 socket", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet6Connect, asm: "r2 = *(u64 *)(r1 +64)\nr3 = *(u32 *)(r2 +4)\nr4 = *(u32 *)(r2 +12)\nr4 <<= 8\nr3 |= r4\n*(u32 *)(r1 +24) = r3\nr0 = 1\nexit", ctx: u32(72, 28, 10, 32, 1, 36, 6), ret: 1, outOff: 24, out: 6<<8 | 10},
		{name: "sock_addr bad sk", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Bind, asm: "r0 = 1\nexit", ctx: u32(72, 64, 1), err: true},
		{name: "sysctl file_pos", typ: ebpf.CGroupSysctl, asm: "r2 = *(u8 *)(r1 +0)\nr2 += 100\n*(u32 *)(r1 +4) = r2\nr0 = 1\nexit", ctx: u32(8, 0, 1, 4, 5), ret: 1, outOff: 4, out: 101},
		{name: "getsockopt retval", typ: ebpf.CGroupSockopt, attach: ebpf.AttachCGroupGetsockopt, asm: "r2 = *(u32 *)(r1 +24)\n*(u32 *)(r1 +36) = r2\nr0 = 1\nexit", ctx: u32(40, 24, 6, 36, 0xffffffff), ret: 1, outOff: 36, out: 6},
		{name: "setsockopt optval", typ: ebpf.CGroupSockopt, attach: ebpf.AttachCGroupSetsockopt, asm: "r2 = *(u64 *)(r1 +8)\nr3 = *(u64 *)(r1 +16)\nr4 = r2\nr4 += 1\nr0 = 0\nif r4 > r3 goto out\nr5 = *(u8 *)(r2 +0)\n*(u32 *)(r1 +32) = r5\nr0 = 1\nout: exit", data: pkt, ctx: u32(40, 32, 8), ret: 1, outOff: 32, out: 0xa5},
		{name: "device major", typ: ebpf.CGroupDevice, asm: "r0 = *(u32 *)(r1 +4)\nr0 &= 1\nexit", ctx: u32(12, 0, 2, 4, 1), ret: 1},
		{name: "sk_reuseport hash", typ: ebpf.SkReuseport, attach: ebpf.AttachSkReuseportSelect, asm: "r0 = *(u32 *)(r1 +32)\nr2 = *(u32 *)(r1 +16)\nr0 += r2\nexit", data: pkt, ctx: u32(56, 32, 1000), ret: 1008},
		{name: "sk_reuseport bad len", typ: ebpf.SkReuseport, asm: "r0 = 0\nexit", ctx: u32(56, 16, 1), err: true},
	} {
		insns, err := isa.Assemble(c.asm)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, opts := range []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {NoVerify: true}} {
			opts.AttachType = c.attach
			p, err := bpfvm.NewRawProgram(c.name, c.typ, insns, opts)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			pt, _ := progtype.OfAttach(c.typ, c.attach)
			out := make([]byte, pt.ContextSize)
			ro := &bpfvm.RunOptions{Data: c.data, ContextOut: out}
			if c.ctx != nil {
				ro.Context = c.ctx
			}
			ret, err := p.Run(ro)
			p.Close()
			switch {
			case c.err && err == nil:
				t.Errorf("%s: accepted the input", c.name)
			case c.err:
			case err != nil:
				t.Errorf("%s: %v", c.name, err)
			case ret != c.ret:
				t.Errorf("%s: returned %d, want %d", c.name, ret, c.ret)
			case c.outOff != 0 && binary.LittleEndian.Uint32(out[c.outOff:]) != c.out:
				t.Errorf("%s: context out %d at %d, want %d", c.name, binary.LittleEndian.Uint32(out[c.outOff:]), c.outOff, c.out)
			}
		}
	}
}

// TestFlowDissectorRun compares flow_dissector test runs with the kernel's
// BPF_PROG_TEST_RUN, on both engines and in checked mode: the flow keys the
// program starts from and fills (the output packet, nhoff and thoff
// clamped), the keys' input (flags only) as the context input and output,
// repetitions each starting from fresh keys, refused inputs.
func TestFlowDissectorRun(t *testing.T) {
	const keys = "r2 = *(u64 *)(r1 +144)\n"
	progs := map[string]string{
		"ok":        "r0 = 0\nexit",
		"drop":      "r0 = 2\nexit",
		"flags":     keys + "r0 = *(u32 *)(r2 +48)\nexit",
		"clamp":     keys + "r3 = 1000\n*(u16 *)(r2 +0) = r3\nr3 = 5\n*(u16 *)(r2 +2) = r3\nr0 = 0\nexit",
		"clamp low": keys + "r3 = 3\n*(u16 *)(r2 +0) = r3\n*(u16 *)(r2 +2) = r3\nr0 = 0\nexit",
		"fill": keys + "r6 = *(u32 *)(r1 +76)\nr7 = *(u32 *)(r1 +80)\nr4 = r6\nr4 += 34\nr0 = -1\nif r4 > r7 goto out\n" +
			"r3 = *(u8 *)(r6 +23)\n*(u8 *)(r2 +9) = r3\nr3 = *(u32 *)(r6 +26)\n*(u32 *)(r2 +16) = r3\nr3 = *(u32 *)(r6 +30)\n*(u32 *)(r2 +20) = r3\n" +
			"r3 = 0x0800\n*(u16 *)(r2 +4) = r3\nr3 = 34\n*(u16 *)(r2 +2) = r3\nr0 = 0\nout: exit",
		"repeat": keys + "r3 = *(u8 *)(r2 +10)\nr3 += 1\n*(u8 *)(r2 +10) = r3\nr0 = *(u16 *)(r2 +8)\nexit",
	}
	flagsIn := func(f uint32) []byte {
		b := make([]byte, 56)
		binary.LittleEndian.PutUint32(b[48:], f)
		return b
	}
	ip := ctxFrame("\x00\x00\x00\x00\x00\x00", 0x0800, 0x45, 64)
	frames := map[string][]byte{
		"ipv4":     ip,
		"ethernet": ip[:14],
		"short":    ip[:13],
		"ipv6":     ctxFrame("\x00\x00\x00\x00\x00\x00", 0x86dd, 0x60, 80),
	}
	inputs := map[string][]byte{
		"none":      nil,
		"flags":     flagsIn(0x7),
		"long":      append(flagsIn(1), 0, 0, 0, 0),
		"bad nhoff": func() []byte { b := flagsIn(0); b[0] = 1; return b }(),
		"bad long":  append(flagsIn(1), 1),
	}
	engines := []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {NoVerify: true}}
	var compared, agreed int
	for pname, src := range progs {
		insns, err := isa.Assemble(src)
		if err != nil {
			t.Fatalf("%s: %v", pname, err)
		}
		var ours []*bpfvm.Program
		for _, opts := range engines {
			p, err := bpfvm.NewRawProgram(pname, ebpf.FlowDissector, insns, opts)
			if err != nil {
				t.Fatalf("%s: %v", pname, err)
			}
			defer p.Close()
			ours = append(ours, p)
		}
		kp := kernelRawProgram(t, ebpf.FlowDissector, insns)
		for fname, frame := range frames {
			for iname, in := range inputs {
				for _, repeat := range []uint32{1, 3} {
					id := fmt.Sprintf("%s, %s, keys %s, repeat %d", pname, fname, iname, repeat)
					type result struct {
						ret       uint32
						err       error
						data, ctx []byte
					}
					runOurs := func(p *bpfvm.Program) result {
						r := result{data: make([]byte, 64), ctx: make([]byte, 56)}
						ro := &bpfvm.RunOptions{Data: frame, DataOut: r.data, ContextOut: r.ctx, Repeat: repeat}
						if in != nil {
							ro.Context = in
						}
						res, err := p.Execute(ro)
						r.err = err
						if err == nil {
							r.ret, r.data = uint32(res.R0), r.data[:res.DataSize]
						}
						return r
					}
					got := runOurs(ours[0])
					for i, p := range ours[1:] {
						o := runOurs(p)
						if o.ret != got.ret || (o.err == nil) != (got.err == nil) || !bytes.Equal(o.data, got.data) {
							t.Errorf("%s: engine %d: %d %v % x; engine 0: %d %v % x", id, i+1, o.ret, o.err, o.data, got.ret, got.err, got.data)
						}
					}
					if kp == nil {
						continue
					}
					k := result{data: make([]byte, 64), ctx: make([]byte, 56)}
					ko := &ebpf.RunOptions{Data: frame, DataOut: k.data, ContextOut: k.ctx, Repeat: repeat}
					if in != nil {
						ko.Context = in
					}
					k.ret, k.err = kp.Run(ko)
					k.data = ko.DataOut
					compared++
					switch {
					case (k.err == nil) != (got.err == nil):
						t.Errorf("%s: bpfvm %d, %v; kernel %d, %v", id, got.ret, got.err, k.ret, k.err)
					case k.err == nil && k.ret != got.ret:
						t.Errorf("%s: bpfvm %d, kernel %d", id, got.ret, k.ret)
					case k.err == nil && !bytes.Equal(k.data, got.data):
						t.Errorf("%s: flow keys\nbpfvm  % x\nkernel % x", id, got.data, k.data)
					case k.err == nil && !bytes.Equal(k.ctx, got.ctx):
						t.Errorf("%s: context out\nbpfvm  % x\nkernel % x", id, got.ctx, k.ctx)
					default:
						agreed++
					}
				}
			}
		}
	}
	// bpf_flow_dissector_load_bytes, flow_dissector's skb_load_bytes, is
	// not bpfvm's: a load error, not the skb one run instead.
	insns, _ := isa.Assemble("r2 = 14\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\nr0 = 0\nexit")
	for _, opts := range engines {
		if _, err := bpfvm.NewRawProgram("load_bytes", ebpf.FlowDissector, insns, opts); !errors.Is(err, vm.ErrHelper) {
			t.Errorf("load_bytes: %v, want vm.ErrHelper", err)
		}
	}
	if compared == 0 {
		t.Skip("no kernel to compare with")
	}
	t.Logf("flow_dissector test runs: %d/%d agree with the kernel", agreed, compared)
}

// TestDataOnlyPerfOutput checks bpf_perf_event_output of the types whose
// kernel helper is bpf_event_output_data (sk_lookup here, which has a test
// run to compare with): a packet length in the flags is -EINVAL, as no
// packet is appended; without one the sample goes out.
func TestDataOnlyPerfOutput(t *testing.T) {
	prog := func(flags int64) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Imm(asm.R6, 7),
			asm.StoreMem(asm.R10, -8, asm.R6, asm.DWord),
			asm.LoadMapPtr(asm.R2, 0).WithReference("events"),
			asm.LoadImm(asm.R3, flags, asm.DWord),
			asm.Mov.Reg(asm.R4, asm.R10),
			asm.Add.Imm(asm.R4, -8),
			asm.Mov.Imm(asm.R5, 8),
			asm.FnPerfEventOutput.Call(),
			// 1 for -EINVAL, 0 for success, else 0 too (compared below).
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Mov.Imm(asm.R0, 0),
			asm.JNE.Imm(asm.R1, -22, "out"),
			asm.Mov.Imm(asm.R0, 1),
			asm.Return().WithSymbol("out"),
		}
	}
	const current = 0xffffffff
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"events": {Name: "events", Type: ebpf.PerfEventArray}},
		Programs: map[string]*ebpf.ProgramSpec{
			"plain":  {Name: "plain", Type: ebpf.SkLookup, AttachType: ebpf.AttachSkLookup, License: "GPL", Instructions: prog(current)},
			"ctxlen": {Name: "ctxlen", Type: ebpf.SkLookup, AttachType: ebpf.AttachSkLookup, License: "GPL", Instructions: prog(current | 4<<32)},
		},
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	kern := kernelCollectionSpec(t, spec)
	ctx := skLookupCtx(2, 6, 1, 2, [4]uint32{}, [4]uint32{}, 80, 8080)
	for name, want := range map[string]uint32{"plain": 0, "ctxlen": 1} {
		got, err := coll.Programs[name].Run(&bpfvm.RunOptions{Context: ctx})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: returned %d, want %d", name, got, want)
		}
		if kern == nil {
			continue
		}
		k, err := kern.Programs[name].Run(&ebpf.RunOptions{Context: ctx})
		if err != nil {
			t.Fatal(err)
		}
		if k != got {
			t.Errorf("%s: kernel %d, bpfvm %d", name, k, got)
		}
	}
}

// kernelCollectionSpec loads spec into the kernel; nil where bpf() is not
// permitted.
func kernelCollectionSpec(t *testing.T, spec *ebpf.CollectionSpec) *ebpf.Collection {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return nil
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatalf("kernel load: %v", err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// TestProgTypesELF loads a clang-built program of each socket and cgroup
// family (testdata/progtypes.c) with the attach types their sections name,
// into bpfvm and the kernel (whose verifier takes them all), and runs them
// in both modes: against the kernel's BPF_PROG_TEST_RUN where it has one
// (cgroup_skb, sk_lookup, flow_dissector), with bpfvm's documented context
// inputs elsewhere.
func TestProgTypesELF(t *testing.T) {
	const file = "testdata/progtypes.o"
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, file, bpfvm.CollectionOptions{})
		for _, c := range []struct {
			name string
			data []byte
			ctx  []byte
		}{
			{"egress", eth(0x0800, ipv4(17, 0, udp(53))), nil},
			{"egress", eth(0x0800, ipv4(6, 0, tcp(80))), nil},
			{"egress", eth(0x86dd, ipv6(17, udp(53))), nil},
			{"lookup", nil, skLookupCtx(2, 6, 1, 2, [4]uint32{}, [4]uint32{}, 40000, 80)},
			{"lookup", nil, skLookupCtx(2, 6, 1, 2, [4]uint32{}, [4]uint32{}, 40000, 443)},
			{"lookup", nil, skLookupCtx(10, 6, 1, 2, [4]uint32{}, [4]uint32{}, 40000, 80)},
			{"dissect", eth(0x0800, ipv4(6, 0, tcp(80))), nil},
			{"dissect", eth(0x86dd, ipv6(17, udp(53))), nil},
		} {
			if c.ctx != nil {
				// sk_lookup: a context, no packet in or out.
				got, err := vm.Programs[c.name].Run(&bpfvm.RunOptions{Context: c.ctx})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if kern != nil {
					k, err := kern.Programs[c.name].Run(&ebpf.RunOptions{Context: c.ctx})
					if err != nil {
						t.Fatalf("%s: kernel: %v", c.name, err)
					}
					if k != got {
						t.Errorf("%s: bpfvm %d, kernel %d", c.name, got, k)
					}
				}
				continue
			}
			got := run(t, vm.Programs[c.name], c.data, nil)
			if k, ok := kernelRun(t, kern, c.name, c.data, nil); ok {
				if k.ret != got.ret || !bytes.Equal(k.data, got.data) {
					t.Errorf("%s: bpfvm %d % x, kernel %d % x", c.name, got.ret, got.data, k.ret, k.data)
				}
			}
		}
		le := binary.LittleEndian
		for _, c := range []struct {
			name    string
			ctx     []byte
			ret     uint32
			off, n  int
			want    uint32
			wantCtx bool
		}{
			// user_port 80 (network order in the low half), TCP.
			{name: "connect4", ctx: func() []byte {
				b := make([]byte, 72)
				le.PutUint32(b[0:], 2)
				binary.BigEndian.PutUint16(b[24:], 80)
				le.PutUint32(b[36:], 6)
				return b
			}(), ret: 1, off: 4, want: 0x0100007f},
			{name: "getpeername6", ctx: make([]byte, 72), ret: 1, off: 20, want: 0x01000000},
			{name: "sock_ops", ctx: func() []byte {
				b := make([]byte, 224)
				le.PutUint32(b[0:], 1) // BPF_SOCK_OPS_TIMEOUT_INIT
				binary.BigEndian.PutUint32(b[64:], 443)
				return b
			}(), ret: 1, off: 4, want: 10},
			{name: "sys_ctl", ctx: []byte{1, 0, 0, 0, 0, 0, 0, 0}, ret: 0},
			{name: "get_sockopt", ctx: func() []byte {
				b := make([]byte, 40)
				le.PutUint32(b[36:], 0xfffffff2) // -EFAULT
				return b
			}(), ret: 1, off: 36, want: 0},
		} {
			p := vm.Programs[c.name]
			out := make([]byte, len(c.ctx))
			ret, err := p.Run(&bpfvm.RunOptions{Context: c.ctx, ContextOut: out})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if ret != c.ret {
				t.Errorf("%s: returned %d, want %d", c.name, ret, c.ret)
			}
			if c.off != 0 && le.Uint32(out[c.off:]) != c.want {
				t.Errorf("%s: context out %#x at %d, want %#x", c.name, le.Uint32(out[c.off:]), c.off, c.want)
			}
		}
		for _, c := range []struct {
			data string
			ret  uint32
		}{{"GET /", 1}, {"PUT /", 0}, {"G", 0}} {
			ret, err := vm.Programs["msg"].Run(&bpfvm.RunOptions{Data: []byte(c.data)})
			if err != nil {
				t.Fatal(err)
			}
			if ret != c.ret {
				t.Errorf("msg %q: returned %d, want %d", c.data, ret, c.ret)
			}
		}
	})
}

// TestSockCommonRun reads every field of __sk_buff.sk's socket, at every
// size and offset the verifier allows, through bpfvm's test run and the
// kernel's (which gives the skb a fresh socket of the packet's family and
// addresses), for each type with the skb test run, on both engines and in
// checked mode.
func TestSockCommonRun(t *testing.T) {
	frames := map[string][]byte{
		"ipv4": ctxFrame("\x00\x00\x00\x00\x00\x00", 0x0800, 0x45, 64),
		"ipv6": ctxFrame("\x00\x00\x00\x00\x00\x00", 0x86dd, 0x60, 80),
		"arp":  ctxFrame("\x01\x00\x5e\x00\x00\x01", 0x0806, 0, 42),
	}
	var compared, agreed int
	for _, ty := range []struct {
		typ ebpf.ProgramType
		pt  *progtype.Type
	}{
		{ebpf.SchedCLS, progtype.SchedCLS}, {ebpf.SocketFilter, progtype.SocketFilter},
		{ebpf.CGroupSKB, progtype.CGroupSKBIngress}, {ebpf.LWTIn, progtype.LWTIn}, {ebpf.LWTXmit, progtype.LWTXmit},
	} {
		for _, f := range progtype.SockCommon.Fields {
			for size := uint32(1); size <= f.Size; size *= 2 {
				for off, half := f.Offset, 0; off+size <= f.Offset+f.Size; off, half = off+size*uint32(half), 1-half {
					if _, err := progtype.SockCommon.Access(off, size, progtype.Load); err != nil {
						continue
					}
					// Each load twice: its value, and its high half
					// (rx_queue_mapping's none must not reach it).
					shift := []string{"", "r0 >>= 32\n"}[half]
					src := fmt.Sprintf("r2 = *(u64 *)(r1 +168)\nr0 = 0xdead\nif r2 == 0 goto out\nr0 = *(u%d *)(r2 +%d)\n%sout: exit", size*8, off, shift)
					insns, err := isa.Assemble(viaCB(ty.pt, src))
					if err != nil {
						t.Fatal(err)
					}
					kp := kernelRawProgram(t, ty.typ, insns)
					for fname, frame := range frames {
						id := fmt.Sprintf("%s %s u%d@%d%s, %s", ty.typ, f.Name, size*8, off, []string{"", " >> 32"}[half], fname)
						var got []uint32
						for _, opts := range []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {NoVerify: true}} {
							p, err := bpfvm.NewRawProgram("sk", ty.typ, insns, opts)
							if err != nil {
								t.Fatalf("%s: %v", id, err)
							}
							out := make([]byte, 192)
							r, err := p.Run(&bpfvm.RunOptions{Data: frame, ContextOut: out})
							p.Close()
							if err != nil {
								t.Fatalf("%s: %v", id, err)
							}
							got = append(got, cbOut(ty.pt, r, out))
						}
						if got[0] != got[1] || got[0] != got[2] {
							t.Errorf("%s: engines disagree: %#x", id, got)
						}
						if kp == nil {
							continue
						}
						kout := make([]byte, 192)
						kr, err := kp.Run(&ebpf.RunOptions{Data: frame, ContextOut: kout})
						if err != nil {
							t.Fatalf("%s: kernel: %v", id, err)
						}
						compared++
						if k := cbOut(ty.pt, kr, kout); k != got[0] {
							t.Errorf("%s: bpfvm %#x, kernel %#x", id, got[0], k)
							continue
						}
						agreed++
					}
				}
			}
		}
	}
	if compared == 0 {
		t.Skip("no kernel to compare with")
	}
	t.Logf("socket reads: %d/%d agree with the kernel", agreed, compared)
}
