package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"bpfvm"
	"bpfvm/isa"
	"bpfvm/progtype"
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
		if !f.Read {
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
	// Runs the kernel refuses whatever the program: no context, a packet.
	insns, _ := isa.Assemble("r0 = 1\nexit")
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
		{name: "sk_msg bad size", typ: ebpf.SkMsg, asm: "r0 = 0\nexit", ctx: u32(80, 68, 1), err: true},
		{name: "sock_ops reply", typ: ebpf.SockOps, asm: "r2 = *(u32 *)(r1 +8)\n*(u32 *)(r1 +4) = r2\nr0 = 1\nexit", ctx: u32(224, 0, 4, 8, 77), ret: 1, outOff: 4, out: 77},
		{name: "sock_ops skb_len", typ: ebpf.SockOps, asm: "r2 = *(u32 *)(r1 +208)\n*(u32 *)(r1 +164) = r2\nr0 = 1\nexit", data: pkt, ret: 1, outOff: 164, out: 8},
		{name: "cgroup_sock mark", typ: ebpf.CGroupSock, attach: ebpf.AttachCGroupInetSockCreate, asm: "r2 = *(u32 *)(r1 +12)\n*(u32 *)(r1 +16) = r2\nr0 = 1\nexit", ctx: u32(80, 4, 2, 12, 6), ret: 1, outOff: 16, out: 6},
		{name: "cgroup_sock post_bind port", typ: ebpf.CGroupSock, attach: ebpf.AttachCGroupInet4PostBind, asm: "r0 = *(u32 *)(r1 +44)\nr0 &= 1\nexit", ctx: u32(80, 44, 8081), ret: 1},
		{name: "connect4 port", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r2 = *(u32 *)(r1 +4)\n*(u32 *)(r1 +24) = r2\nr0 = 1\nexit", ctx: u32(72, 0, 2, 4, 0x0100007f), ret: 1, outOff: 24, out: 0x0100007f},
		{name: "sendmsg6 source", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupUDP6Sendmsg, asm: "r2 = 7\n*(u64 *)(r1 +48) = r2\nr0 = 1\nexit", ctx: u32(72, 0, 10), ret: 1, outOff: 48, out: 7},
		{name: "getpeername6 address", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCgroupInet6GetPeername, asm: "r2 = *(u64 *)(r1 +8)\n*(u64 *)(r1 +16) = r2\nr0 = 1\nexit", ctx: u32(72, 8, 0x20010db8), ret: 1, outOff: 16, out: 0x20010db8},
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
