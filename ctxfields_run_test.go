package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
)

// kernelRawProgram loads insns into the kernel; nil where bpf() is not
// permitted.
func kernelRawProgram(t *testing.T, typ ebpf.ProgramType, insns []isa.Instruction) *ebpf.Program {
	t.Helper()
	return kernelRawProgramAttach(t, typ, 0, insns)
}

// kernelRawProgramAttach is kernelRawProgram for expected attach type a.
func kernelRawProgramAttach(t *testing.T, typ ebpf.ProgramType, a ebpf.AttachType, insns []isa.Instruction) *ebpf.Program {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return nil
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatalf("unmarshal for the kernel: %v", err)
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: typ, AttachType: a, Instructions: kinsns, License: "GPL"})
	if errors.Is(err, os.ErrPermission) && !errors.As(err, new(*ebpf.VerifierError)) {
		return nil
	}
	if err != nil {
		t.Fatalf("kernel load: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// ctxFrame builds an Ethernet frame to dst with an Ethernet type (or an
// 802.3 length) and a payload starting with first.
func ctxFrame(dst string, ethType uint16, first byte, n int) []byte {
	f := make([]byte, n)
	copy(f, dst)
	copy(f[6:], "\x02\x00\x00\x00\x00\x01")
	binary.BigEndian.PutUint16(f[12:], ethType)
	for i := 14; i < n; i++ {
		f[i] = first + byte(i)
	}
	return f
}

// skbCtx builds a struct __sk_buff input with the given u32 fields set.
func skbCtx(fields map[uint32]uint64) []byte {
	b := make([]byte, 192)
	for off, v := range fields {
		switch off {
		case 152, 184: // tstamp, hwtstamp
			binary.LittleEndian.PutUint64(b[off:], v)
		default:
			binary.LittleEndian.PutUint32(b[off:], uint32(v))
		}
	}
	return b
}

// ctxReads returns programs reading each readable field of a type: whole,
// and for narrow fields at every narrower size and aligned offset; pointer
// fields as distances from the packet's start or end.
func ctxReads(pt *progtype.Type) map[string]string {
	progs := map[string]string{}
	for _, f := range pt.Fields {
		if !f.Read {
			continue
		}
		switch f.Kind {
		case progtype.PacketData, progtype.SockCommonOrNull, progtype.FlowKeys:
			// Addresses (the socket's fields: TestSockCommonRun).
			continue
		case progtype.PacketEnd, progtype.PacketMeta:
			data := pt.Fields[0].Offset
			for _, g := range pt.Fields {
				if g.Kind == progtype.PacketData {
					data = g.Offset
				}
			}
			progs[f.Name] = fmt.Sprintf("r2 = *(u32 *)(r1 +%d)\nr3 = *(u32 *)(r1 +%d)\nr0 = r3\nr0 -= r2\nexit", data, f.Offset)
			continue
		}
		for size := uint32(1); size <= f.Size && size <= 8; size *= 2 {
			if size != f.Size && !f.Narrow && !f.Memory {
				continue
			}
			for off := f.Offset; off+size <= f.Offset+f.Size; off += size {
				name := fmt.Sprintf("%s/u%d@%d", f.Name, size*8, off)
				load := fmt.Sprintf("r0 = *(u%d *)(r1 +%d)\n", size*8, off)
				if size == 8 {
					// Both halves, so that a 32-bit return sees all.
					load += "r2 = r0\nr2 >>= 32\nr0 ^= r2\n"
				}
				progs[name] = load + "exit"
				if size < 8 {
					progs[name+"/s"] = fmt.Sprintf("r0 = *(s%d *)(r1 +%d)\nr0 >>= 32\nexit", size*8, off)
				}
			}
		}
	}
	return progs
}

// viaCB rewrites a program returning a value for a type whose programs
// may return only 0 or 1 (cgroup_skb): the value goes to __sk_buff.cb[0],
// which the context output returns, and the program returns 1. R1 still
// holds the context at the exit of the programs it is given.
func viaCB(pt *progtype.Type, src string) string {
	if !pt.CheckReturn {
		return src
	}
	return strings.TrimSuffix(src, "exit") + "*(u32 *)(r1 +48) = r0\nr0 = 1\nexit"
}

// cbOut returns the value viaCB left in a context output.
func cbOut(pt *progtype.Type, ret uint32, ctxOut []byte) uint32 {
	if !pt.CheckReturn {
		return ret
	}
	return binary.LittleEndian.Uint32(ctxOut[48:])
}

// TestContextFieldsRun reads every field a program type's context shows
// through bpfvm's test run and the kernel's BPF_PROG_TEST_RUN, on the same
// frames and context inputs (valid and refused), on both engines, and
// compares the results and the context outputs.
func TestContextFieldsRun(t *testing.T) {
	frames := map[string][]byte{
		"ipv4 to host":  ctxFrame("\x00\x00\x00\x00\x00\x00", 0x0800, 0x45, 64),
		"ipv6 bcast":    ctxFrame("\xff\xff\xff\xff\xff\xff", 0x86dd, 0x60, 80),
		"arp mcast":     ctxFrame("\x01\x00\x5e\x00\x00\x01", 0x0806, 0, 42),
		"other host":    ctxFrame("\x02\x00\x00\x00\x00\x02", 0x0800, 0x45, 60),
		"802.3 802.2":   ctxFrame("\x00\x00\x00\x00\x00\x00", 46, 0x42, 60),
		"802.3 raw":     append(ctxFrame("\x00\x00\x00\x00\x00\x00", 46, 0, 16)[:14], 0xff, 0xff, 1, 2, 3, 4),
		"vlan":          ctxFrame("\x00\x00\x00\x00\x00\x00", 0x8100, 0, 64),
		"ethernet only": ctxFrame("\x00\x00\x00\x00\x00\x00", 0x0800, 0, 14),
	}
	skbInputs := map[string]any{
		"none":  nil,
		"zero":  skbCtx(nil),
		"short": make([]byte, 12),
		"inputs": skbCtx(map[uint32]uint64{8: 0x11223344, 32: 7, 36: 3, 48: 0xa1a2a3a4, 52: 0xb1b2b3b4, 64: 0xe1e2e3e4,
			152: 0x0102030405060708, 160: 1500, 164: 3, 176: 1448, 184: 0x1112131415161718}),
		"ifindex 1":         skbCtx(map[uint32]uint64{40: 1}),
		"wire_len max":      skbCtx(map[uint32]uint64{160: 65536}),
		"bad len":           skbCtx(map[uint32]uint64{0: 1}),
		"bad queue_mapping": skbCtx(map[uint32]uint64{12: 1}),
		"bad hash":          skbCtx(map[uint32]uint64{68: 1}),
		"bad tc_index":      skbCtx(map[uint32]uint64{44: 1}),
		"bad wire_len":      skbCtx(map[uint32]uint64{160: 13}),
		"bad wire_len max":  skbCtx(map[uint32]uint64{160: 65537}),
		"bad gso_segs":      skbCtx(map[uint32]uint64{164: 65536}),
		"bad padding":       skbCtx(map[uint32]uint64{180: 1}),
		"too long":          make([]byte, 200),
	}
	xdpCtx := func(data, end, meta, ifindex, rxq, egress uint32) []byte {
		b := make([]byte, 24)
		for i, v := range []uint32{data, end, meta, ifindex, rxq, egress} {
			binary.LittleEndian.PutUint32(b[4*i:], v)
		}
		return b
	}
	types := []struct {
		typ    ebpf.ProgramType
		pt     *progtype.Type
		inputs func(frame []byte) map[string]any
	}{
		{ebpf.SchedCLS, progtype.SchedCLS, func([]byte) map[string]any { return skbInputs }},
		{ebpf.SchedACT, progtype.SchedACT, func([]byte) map[string]any { return skbInputs }},
		{ebpf.SocketFilter, progtype.SocketFilter, func([]byte) map[string]any { return skbInputs }},
		{ebpf.CGroupSKB, progtype.CGroupSKBIngress, func([]byte) map[string]any { return skbInputs }},
		{ebpf.CGroupSKB, progtype.CGroupSKBEgress, func([]byte) map[string]any { return skbInputs }},
		{ebpf.LWTIn, progtype.LWTIn, func([]byte) map[string]any { return skbInputs }},
		{ebpf.LWTOut, progtype.LWTOut, func([]byte) map[string]any { return skbInputs }},
		{ebpf.LWTXmit, progtype.LWTXmit, func([]byte) map[string]any { return skbInputs }},
		{ebpf.XDP, progtype.XDP, func(f []byte) map[string]any {
			n := uint32(len(f))
			return map[string]any{
				"none":                 nil,
				"lo":                   xdpCtx(0, n, 0, 1, 0, 0),
				"no device":            xdpCtx(0, n, 0, 0, 0, 0),
				"bad data_end":         xdpCtx(0, n+1, 0, 0, 0, 0),
				"frags":                xdpCtx(0, n-1, 0, 0, 0, 0),
				"frags only":           xdpCtx(0, 0, 0, 0, 0, 0),
				"metadata":             xdpCtx(4, n, 0, 0, 0, 0),
				"metadata 28":          xdpCtx(28, n, 0, 1, 0, 0),
				"metadata to ethernet": xdpCtx(n-14, n, 0, 0, 0, 0),
				"bad metadata short":   xdpCtx(n-12, n, 0, 0, 0, 0),
				"bad metadata align":   xdpCtx(2, n, 0, 0, 0, 0),
				"bad metadata past":    xdpCtx(n+4, n, 0, 0, 0, 0),
				"bad metadata big":     xdpCtx(220, n, 0, 0, 0, 0),
				"bad data_meta":        xdpCtx(0, n, 4, 0, 0, 0),
				"bad egress":           xdpCtx(0, n, 0, 1, 0, 1),
				"bad queue no device":  xdpCtx(0, n, 0, 0, 1, 0),
				"bad lo queue":         xdpCtx(0, n, 0, 1, 1, 0),
			}
		}},
	}
	engines := []bpfvm.ProgramOptions{
		{Engine: bpfvm.EngineInterpreter},
		{Engine: bpfvm.EngineJIT},
		{Engine: bpfvm.EngineInterpreter, NoVerify: true},
	}
	var compared, agreed, gaps int
	for _, ty := range types {
		for name, src := range ctxReads(ty.pt) {
			insns, err := isa.Assemble(viaCB(ty.pt, src))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			kp := kernelRawProgramAttach(t, ty.typ, ty.pt.Attach, insns)
			var ours []*bpfvm.Program
			for _, opts := range engines {
				opts.AttachType = ty.pt.Attach
				p, err := bpfvm.NewRawProgram(name, ty.typ, insns, opts)
				if err != nil {
					t.Fatalf("%s %s: %v", ty.typ, name, err)
				}
				defer p.Close()
				ours = append(ours, p)
			}
			for fname, frame := range frames {
				for iname, in := range ty.inputs(frame) {
					id := fmt.Sprintf("%s %s, %s, context %s", ty.typ, name, fname, iname)
					got := make([]uint32, len(ours))
					var gotErr error
					// A context output makes the kernel's run have a
					// context (for XDP one whose data_end 0 makes the
					// whole packet fragments): ask for one where the run
					// has one anyway, and from skb types always.
					var ctxOut, kctxOut []byte
					if in != nil || ty.typ != ebpf.XDP {
						ctxOut, kctxOut = make([]byte, ty.pt.ContextSize), make([]byte, ty.pt.ContextSize)
					}
					for i, p := range ours {
						ro := &bpfvm.RunOptions{Data: frame, Context: in}
						if ctxOut != nil {
							ro.ContextOut = ctxOut
						}
						got[i], gotErr = p.Run(ro)
						if got[i] != got[0] {
							t.Errorf("%s: engine %d returned %#x, engine 0 %#x", id, i, got[i], got[0])
						}
					}
					if errors.Is(gotErr, bpfvm.ErrNotSupported) && (iname == "frags" || iname == "frags only") {
						// Known gap: the kernel's test run makes the
						// input past data_end XDP fragments.
						gaps++
						continue
					}
					if kp == nil {
						continue
					}
					opts := &ebpf.RunOptions{Data: frame, Context: in}
					if kctxOut != nil {
						opts.ContextOut = kctxOut
					}
					kret, kerr := kp.Run(opts)
					compared++
					switch {
					case (kerr == nil) != (gotErr == nil):
						t.Errorf("%s: bpfvm %#x, %v; kernel %#x, %v", id, got[0], gotErr, kret, kerr)
					case kerr == nil && kret != got[0]:
						t.Errorf("%s: bpfvm %#x, kernel %#x", id, got[0], kret)
					case kerr == nil && !bytes.Equal(ctxOut, kctxOut):
						t.Errorf("%s: context out\nbpfvm  % x\nkernel % x", id, ctxOut, kctxOut)
					default:
						agreed++
					}
				}
			}
		}
	}
	if compared == 0 {
		t.Skip("no kernel to compare with")
	}
	t.Logf("test-run reads: %d/%d agree with the kernel (%d runs of known gaps not compared)", agreed, compared, gaps)
}

// TestContextFieldsWrite writes each writable field of a type's context,
// with a register and an immediate, at each allowed size, and reads it back
// whole, through bpfvm and the kernel's test run.
func TestContextFieldsWrite(t *testing.T) {
	values := []int64{0, 1, 0x12345678, 0xfffe, 0xffff, 0x1ffff, -1, -2}
	frame := ctxFrame("\x00\x00\x00\x00\x00\x00", 0x0800, 0x45, 64)
	var compared, agreed int
	for _, ty := range []struct {
		typ ebpf.ProgramType
		pt  *progtype.Type
	}{
		{ebpf.SchedCLS, progtype.SchedCLS},
		{ebpf.SocketFilter, progtype.SocketFilter},
		{ebpf.CGroupSKB, progtype.CGroupSKBIngress},
		{ebpf.LWTIn, progtype.LWTIn},
		{ebpf.LWTOut, progtype.LWTOut},
		{ebpf.LWTXmit, progtype.LWTXmit},
	} {
		for _, f := range ty.pt.Fields {
			if !f.Write {
				continue
			}
			for size := uint32(1); size <= 8 && size <= f.Size; size *= 2 {
				if size != f.Size && !f.Memory {
					continue
				}
				for off := f.Offset; off+size <= f.Offset+f.Size; off += size {
					read := fmt.Sprintf("r0 = *(u%d *)(r1 +%d)\n", min(f.Size, 8)*8, f.Offset)
					if f.Memory {
						read = fmt.Sprintf("r0 = *(u%d *)(r1 +%d)\n", size*8, off)
					}
					if min(f.Size, 8) == 8 || size == 8 {
						read += "r2 = r0\nr2 >>= 32\nr0 ^= r2\n"
					}
					for _, v := range values {
						for _, st := range []string{
							fmt.Sprintf("r2 = %d\n*(u%d *)(r1 +%d) = r2\n", v, size*8, off),
							fmt.Sprintf("*(u%d *)(r1 +%d) = %d\n", size*8, off, v),
						} {
							src := st + read + "exit"
							insns, err := isa.Assemble(viaCB(ty.pt, src))
							if err != nil {
								t.Fatalf("%s: %v", src, err)
							}
							id := fmt.Sprintf("%s %s: %q", ty.typ, f.Name, src)
							var got []uint32
							for _, opts := range []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {NoVerify: true}} {
								p, err := bpfvm.NewRawProgram("w", ty.typ, insns, opts)
								if err != nil {
									t.Fatalf("%s: %v", id, err)
								}
								out := make([]byte, ty.pt.ContextSize)
								r, err := p.Run(&bpfvm.RunOptions{Data: frame, ContextOut: out})
								p.Close()
								if err != nil {
									t.Fatalf("%s: %v", id, err)
								}
								got = append(got, cbOut(ty.pt, r, out))
							}
							// Checked mode sees a store's value, not its
							// instruction: a negative immediate below
							// queue_mapping's limit is dropped like a
							// register's (DESIGN.md).
							checkedST := f.StoreLimit != 0 && v < 0 && !strings.HasPrefix(st, "r2")
							if got[0] != got[1] || got[0] != got[2] && !checkedST {
								t.Errorf("%s: engines disagree: %#x", id, got)
							}
							kp := kernelRawProgram(t, ty.typ, insns)
							if kp == nil {
								continue
							}
							kout := make([]byte, ty.pt.ContextSize)
							kr, err := kp.Run(&ebpf.RunOptions{Data: frame, ContextOut: kout})
							kp.Close()
							if err != nil {
								t.Fatalf("%s: kernel: %v", id, err)
							}
							kr = cbOut(ty.pt, kr, kout)
							compared++
							if kr != got[0] {
								t.Errorf("%s: bpfvm %#x, kernel %#x", id, got[0], kr)
								continue
							}
							agreed++
						}
					}
				}
			}
		}
	}
	if compared == 0 {
		t.Skip("no kernel to compare with")
	}
	t.Logf("context writes: %d/%d agree with the kernel", agreed, compared)
}

// TestContextOutAdjust compares the xdp_md output and the packet after the
// program moved the packet's start, end or metadata with the kernel's, with
// and without metadata in the input.
func TestContextOutAdjust(t *testing.T) {
	frame := ctxFrame("\x00\x00\x00\x00\x00\x00", 0x0800, 0x45, 64)
	in := make([]byte, 24)
	binary.LittleEndian.PutUint32(in[4:], uint32(len(frame)))
	withMeta := bytes.Clone(in)
	binary.LittleEndian.PutUint32(withMeta[0:], 8)
	for _, in := range [][]byte{in, withMeta} {
		for name, src := range map[string]string{
			"none":        "r0 = 2\nexit",
			"head +4":     "r6 = r1\nr2 = 4\ncall bpf_xdp_adjust_head#44\nr0 = 2\nexit",
			"head -8":     "r6 = r1\nr2 = -8\ncall bpf_xdp_adjust_head#44\nr0 = 2\nexit",
			"meta -8":     "r6 = r1\nr2 = -8\ncall bpf_xdp_adjust_meta#54\nr0 = 2\nexit",
			"meta, head":  "r6 = r1\nr2 = -8\ncall bpf_xdp_adjust_meta#54\nr1 = r6\nr2 = 4\ncall bpf_xdp_adjust_head#44\nr0 = 2\nexit",
			"tail -10":    "r6 = r1\nr2 = -10\ncall bpf_xdp_adjust_tail#65\nr0 = 2\nexit",
			"read length": "r2 = *(u32 *)(r1 +0)\nr3 = *(u32 *)(r1 +4)\nr0 = r3\nr0 -= r2\nexit",
		} {
			insns, err := isa.Assemble(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, opts := range []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {NoVerify: true}} {
				p, err := bpfvm.NewRawProgram(name, ebpf.XDP, insns, opts)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				defer p.Close()
				out, data := make([]byte, 24), make([]byte, 512)
				res, err := p.Execute(&bpfvm.RunOptions{Data: frame, Context: in, ContextOut: out, DataOut: data})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				kp := kernelRawProgram(t, ebpf.XDP, insns)
				if kp == nil {
					continue
				}
				kout := make([]byte, 24)
				kopts := &ebpf.RunOptions{Data: frame, Context: in, ContextOut: kout, DataOut: make([]byte, 512)}
				kret, err := kp.Run(kopts)
				if err != nil {
					t.Fatalf("%s: kernel: %v", name, err)
				}
				if uint32(res.R0) != kret || !bytes.Equal(out, kout) || !bytes.Equal(data[:res.DataSize], kopts.DataOut) {
					t.Errorf("%s (%+v, input % x): bpfvm %d, context % x, data %d bytes; kernel %d, % x, %d bytes", name, opts, in[:8], res.R0, out, res.DataSize, kret, kout, len(kopts.DataOut))
				}
			}
		}
	}
}
