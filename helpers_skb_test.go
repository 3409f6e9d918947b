package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/runner"
)

// skbConfig is one way of loading a test object: unverified (checked), or
// verified on an engine with or without run-time checks.
type skbConfig struct {
	name     string
	noVerify bool
	engine   bpfvm.Engine
	checks   bpfvm.Checks
}

var skbConfigs = []skbConfig{
	{"unverified", true, bpfvm.EngineInterpreter, bpfvm.ChecksDefault},
	{"interp", false, bpfvm.EngineInterpreter, bpfvm.ChecksDefault},
	{"interp-checked", false, bpfvm.EngineInterpreter, bpfvm.ChecksOn},
	{"jit", false, bpfvm.EngineJIT, bpfvm.ChecksDefault},
	{"jit-checked", false, bpfvm.EngineJIT, bpfvm.ChecksOn},
}

// skbConfigsDo runs f for every configuration with the object loaded,
// and the kernel's copy (nil without an oracle).
func skbConfigsDo(t *testing.T, file string, f func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection)) {
	kern := kernelCollection(t, file)
	for _, c := range skbConfigs {
		t.Run(c.name, func(t *testing.T) {
			opts := bpfvm.CollectionOptions{}
			opts.Programs.Engine, opts.Programs.Checks = c.engine, c.checks
			f(t, loadVM(t, c.noVerify, file, opts), kern)
		})
	}
}

// skbOut is the outcome of one run of a program on a socket buffer.
type skbOut struct {
	ret  uint32
	data []byte
	ctx  []byte // the context output (struct __sk_buff)
	res  bpfvm.Result
}

// runSkb runs a bpfvm program on data and ctx in the world net.
func runSkb(t *testing.T, p *bpfvm.Program, data, ctx []byte, net *bpfvm.Net) skbOut {
	t.Helper()
	out := make([]byte, len(data)+2*runner.SkbMaxLen)
	var ctxOut []byte
	if ctx != nil {
		ctxOut = make([]byte, len(ctx))
	}
	opts := &bpfvm.RunOptions{Data: data, DataOut: out, Net: net}
	if ctx != nil {
		opts.Context, opts.ContextOut = ctx, ctxOut
	}
	res, err := p.Execute(opts)
	if err != nil {
		t.Fatal(err)
	}
	return skbOut{uint32(res.R0), out[:res.DataSize], ctxOut, res}
}

// kernelSkb runs the kernel's copy of a program the same way.
func kernelSkb(t *testing.T, kern *ebpf.Collection, name string, data, ctx []byte) (skbOut, bool) {
	t.Helper()
	if kern == nil {
		return skbOut{}, false
	}
	p := kern.Programs[name]
	if p == nil {
		t.Fatalf("kernel: no program %s", name)
	}
	out := make([]byte, len(data)+2*runner.SkbMaxLen)
	opts := &ebpf.RunOptions{Data: data, DataOut: out}
	var ctxOut []byte
	if ctx != nil {
		ctxOut = make([]byte, len(ctx))
		opts.Context, opts.ContextOut = ctx, ctxOut
	}
	ret, err := p.Run(opts)
	if err != nil {
		t.Fatalf("kernel run: %v", err)
	}
	return skbOut{ret: ret, data: opts.DataOut, ctx: ctxOut}, true
}

// checkSkb runs name on bpfvm and, where it can, on the kernel, and
// compares the return value, the output packet and the context output;
// it returns bpfvm's outcome for the caller's own checks.
func checkSkb(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, name string, data, ctx []byte) skbOut {
	t.Helper()
	p := vm.Programs[name]
	if p == nil {
		t.Fatalf("no program %s", name)
	}
	got := runSkb(t, p, data, ctx, nil)
	if k, ok := kernelSkb(t, kern, name, data, ctx); ok {
		if k.ret != got.ret {
			t.Errorf("%s: kernel returned %d (%#x), bpfvm %d (%#x)", name, int32(k.ret), k.ret, int32(got.ret), got.ret)
		}
		if !bytes.Equal(k.data, got.data) {
			t.Errorf("%s: output packet differs from the kernel's\nbpfvm  % x\nkernel % x", name, got.data, k.data)
		}
		if !bytes.Equal(k.ctx, got.ctx) {
			t.Errorf("%s: context output differs from the kernel's\nbpfvm  % x\nkernel % x", name, got.ctx, k.ctx)
		}
	}
	return got
}

// cb returns word i of the cb[] of a struct __sk_buff.
func cb(ctx []byte, i int) uint32 { return binary.NativeEndian.Uint32(ctx[48+4*i:]) }

// wantSkb checks a run's return value and cb[] words (nil: not checked).
func wantSkb(t *testing.T, got skbOut, ret uint32, cbs ...any) {
	t.Helper()
	if got.ret != ret {
		t.Errorf("returned %d (%#x), want %d (%#x)", int32(got.ret), got.ret, int32(ret), ret)
	}
	for i, w := range cbs {
		if w == nil {
			continue
		}
		var want uint32
		switch w := w.(type) {
		case int:
			want = uint32(w)
		case uint32:
			want = w
		}
		if g := cb(got.ctx, i); g != want {
			t.Errorf("cb[%d] = %d (%#x), want %d (%#x)", i, int32(g), g, int32(want), want)
		}
	}
}

const (
	eNOTSUPP = 524
	eNOMEM   = 12
	eALREADY = 114
)

// tcpFrame is an IPv4 TCP frame of n bytes (at least 54).
func tcpFrame(n int) []byte {
	f := eth(0x0800, ipv4(6, 0, append(tcp(80), make([]byte, n-54)...)))
	for i := 54; i < len(f); i++ {
		f[i] = byte(i)
	}
	return f
}

// tcp6Frame is an IPv6 TCP frame.
func tcp6Frame() []byte { return eth(0x86dd, ipv6(6, tcp(80))) }

// htons is a 16-bit value in network order, as a program passes a __be16.
func htons(v uint16) uint32 { return uint32(v>>8 | v<<8&0xff00) }

func TestHelperSkbChangeTail(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		for _, c := range []struct {
			name       string
			len, flags uint32
			ret        uint32
			outLen     int
		}{
			{"same", 64, 0, 0, 64},
			{"trim", 40, 0, 0, 40},
			{"trim to the network header", 14, 0, 0, 14},
			{"into the MAC header", 13, 0, errno(eINVAL), 64},
			{"grow zeroed", 100, 0, 0, 100},
			{"grow to the maximum", runner.SkbMaxLen, 0, 0, runner.SkbMaxLen},
			{"past the maximum", runner.SkbMaxLen + 1, 0, errno(eINVAL), 64},
			{"flags", 64, 1, errno(eINVAL), 64},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "change_tail", f, skbCB(c.len, c.flags))
				wantSkb(t, got, c.ret, nil, nil, c.outLen, c.outLen)
				want := append(bytes.Clone(f), make([]byte, max(0, c.outLen-len(f)))...)[:c.outLen]
				if !bytes.Equal(got.data, want) {
					t.Errorf("output packet\n got % x\nwant % x", got.data, want)
				}
			})
		}
		// A GSO packet (gso_size given) stops being one.
		ctx := skbCB(100, 0)
		binary.NativeEndian.PutUint32(ctx[164:], 3)   // gso_segs
		binary.NativeEndian.PutUint32(ctx[176:], 100) // gso_size
		got := checkSkb(t, vm, kern, "change_tail", f, ctx)
		wantSkb(t, got, 0, nil, nil, 100, 100, 0)
	})
}

func TestHelperSkbChangeHead(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		for _, c := range []struct {
			name        string
			room, flags uint32
			ret         uint32
			outLen      int
		}{
			{"nothing", 0, 0, 0, 64},
			{"14 zeroed", 14, 0, 0, 78},
			{"to the maximum", runner.SkbMaxLen - 64, 0, 0, runner.SkbMaxLen},
			{"past the maximum", runner.SkbMaxLen - 63, 0, errno(eINVAL), 64},
			{"wrapping", 0xffffffff, 0, errno(eINVAL), 64},
			{"flags", 4, 2, errno(eINVAL), 64},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "change_head", f, skbCB(c.room, c.flags))
				wantSkb(t, got, c.ret, nil, nil, c.outLen, c.outLen)
				want := append(make([]byte, c.outLen-len(f)), f...)
				if !bytes.Equal(got.data, want) {
					t.Errorf("output packet\n got % x\nwant % x", got.data, want)
				}
			})
		}
		// The new bytes are the MAC header: a change_tail to 14 then
		// keeps them and the old Ethernet header.
	})
}

func TestHelperSkbPullData(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		for _, c := range []struct {
			n, ret uint32
		}{{0, 0}, {14, 0}, {64, 0}, {65, errno(eNOMEM)}, {0xffffffff, errno(eNOMEM)}} {
			got := checkSkb(t, vm, kern, "pull_data", f, skbCB(c.n))
			wantSkb(t, got, c.ret, nil, nil, 64)
		}
	})
}

func TestHelperSkbAdjustRoom(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(80)
		f6 := tcp6Frame()
		arp := eth(0x0806, make([]byte, 46))
		const (
			net, mac                = 0, 1
			fixedGSO, encap4        = 1, 2
			encap6, gre, udpEncap   = 4, 8, 16
			noReset, l2eth          = 32, 64
			decap4, decap6          = 128, 256
			ipProto, ip6Proto       = 0x0008, 0xdd86
			notsupp, inval, already = eNOTSUPP, eINVAL, eALREADY
		)
		for _, c := range []struct {
			name               string
			data               []byte
			diff               int32
			mode, flags, flagH uint32
			csum               uint32
			ret                uint32
			len, proto         uint32
		}{
			{"grow net 8", f, 8, net, 0, 0, 0, 0, 88, ipProto},
			{"grow mac 20", f, 20, mac, 0, 0, 0, 0, 100, ipProto},
			{"shrink net 8", f, -8, net, 0, 0, 0, 0, 72, ipProto},
			{"shrink mac 20", f, -20, mac, 0, 0, 0, 0, 60, ipProto},
			{"shrink to the IP header", f, -46, net, 0, 0, 0, 0, 34, ipProto},
			{"shrink into the IP header", f, -47, net, 0, 0, 0, errno(notsupp), 80, ipProto},
			{"shrink below an IP header", f, -47, mac, 0, 0, 0, errno(notsupp), 80, ipProto},
			{"shrink to an IP header", f, -46, mac, 0, 0, 0, 0, 34, ipProto},
			{"too far", f, 0x1000, net, 0, 0, 0, errno(eFAULT), 80, ipProto},
			{"bad mode", f, 8, 2, 0, 0, 0, errno(notsupp), 80, ipProto},
			{"bad flags", f, 8, net, 1 << 9, 0, 0, errno(inval), 80, ipProto},
			{"not IP", arp, 8, net, 0, 0, 0, errno(notsupp), 60, 0x0608},
			{"ipv6 grow", f6, 16, net, 0, 0, 0, 0, 90, ip6Proto},
			{"encap ipip", f, 20, mac, encap4, 0, 0, 0, 100, ipProto},
			{"encap 6in4", f, 20, mac, encap4, 0, 0, 0, 100, ipProto},
			{"encap 4in6", f, 40, mac, encap6, 0, 0, 0, 120, ip6Proto},
			{"encap both L3", f, 40, mac, encap4 | encap6, 0, 0, errno(inval), 80, ipProto},
			{"encap gre and udp", f, 40, mac, encap4 | gre | udpEncap, 0, 0, errno(inval), 80, ipProto},
			{"encap udp", f, 28, mac, encap4 | udpEncap, 0, 0, 0, 108, ipProto},
			{"encap l2 eth", f, 42, mac, encap4 | gre | l2eth, 14 << 24, 0, 0, 122, ipProto},
			{"encap l2 too short", f, 42, mac, encap4 | gre | l2eth, 10 << 24, 0, errno(inval), 80, ipProto},
			{"encap l2 longer than the room", f, 20, mac, encap4 | 30<<0, 30 << 24, 0, errno(inval), 80, ipProto},
			{"decap on grow", f, 8, mac, decap4, 0, 0, errno(inval), 80, ipProto},
			{"decap 6 to 4", f6, -40, mac, decap4, 0, 0, 0, 34, ipProto},
			{"decap 4 to 6", f, -20, mac, decap6, 0, 0, 0, 60, ip6Proto},
			{"decap 4 to 6 short", f, -27, mac, decap6, 0, 0, errno(notsupp), 80, ipProto},
			{"decap both", f6, -20, mac, decap4 | decap6, 0, 0, errno(inval), 74, ip6Proto},
			{"shrink with encap flags", f, -8, net, encap4, 0, 0, errno(inval), 80, ipProto},
			{"csum reset", f, 8, net, 0, 0, 1, 0, 88, ipProto},
			{"csum kept", f, 8, net, noReset, 0, 1, 0, 88, ipProto},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "adjust_room", c.data, skbCB(uint32(c.diff), c.mode, c.flags, c.flagH, c.csum))
				wantSkb(t, got, c.ret, c.len, c.proto)
			})
		}
	})
}

func TestHelperSkbChangeProto(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f, f6 := tcpFrame(64), tcp6Frame()
		for _, c := range []struct {
			name             string
			data             []byte
			proto, flags     uint32
			ret, len, pr, hh uint32
		}{
			{"4 to 6", f, htons(0x86dd), 0, 0, 84, 0xdd86, 0},
			{"6 to 4", f6, htons(0x0800), 0, 0, 54, 0x0008, 0},
			{"4 to 4", f, htons(0x0800), 0, errno(eNOTSUPP), 64, 0x0008, 7},
			{"flags", f, htons(0x86dd), 1, errno(eINVAL), 64, 0x0008, 7},
			{"6 to 6", f6, htons(0x86dd), 0, errno(eNOTSUPP), 74, 0xdd86, 7},
			{"4 to ARP", f, htons(0x0806), 0, errno(eNOTSUPP), 64, 0x0008, 7},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "change_proto", c.data, skbCB(c.proto, c.flags))
				wantSkb(t, got, c.ret, nil, nil, c.len, c.pr, c.hh)
			})
		}
	})
}

func TestHelperSkbChangeType(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		for _, c := range []struct{ typ, ret, got uint32 }{{0, 0, 0}, {1, 0, 1}, {3, 0, 3}, {4, errno(eINVAL), 3}} {
			got := checkSkb(t, vm, kern, "change_type", f, skbCB(c.typ))
			wantSkb(t, got, c.ret, nil, c.got)
		}
	})
}

func TestHelperSkbVlan(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		q := eth(0x8100, []byte{0x00, 0x05, 0x08, 0x00}, ipv4(6, 0, tcp(80)))
		qq := eth(0x88a8, []byte{0x00, 0x05, 0x81, 0x00, 0x00, 0x06, 0x08, 0x00}, ipv4(6, 0, tcp(80)))
		const push, pop = 1, 2
		protos := htons(0x8100) | htons(0x88a8)<<16
		for _, c := range []struct {
			name    string
			data    []byte
			ops     uint32
			protos  uint32
			ret     uint32
			present uint32
		}{
			{"push", f, push, protos, 0, 1 | 10<<16},
			{"push bad proto", f, push, htons(0x1234), 0, 1 | 10<<16},
			{"push twice", f, push | push<<8, protos, 0, 1 | 11<<16},
			{"push three", f, push | push<<8 | push<<16, protos, 0, 1 | 12<<16},
			{"push pop", f, push | pop<<8, protos, 0, 0},
			{"pop untagged", f, pop, protos, 0, 0},
			{"pop in packet", q, pop, protos, 0, 0},
			{"pop q-in-q", qq, pop, protos, 0, 1 | 6<<16},
			{"pop twice q-in-q", qq, pop | pop<<8, protos, 0, 0},
			{"push onto tagged packet", q, push | push<<8, protos, 0, 1 | 11<<16},
			{"pop short", eth(0x8100, []byte{0, 1}), pop, protos, errno(eNOMEM) & 0xff, 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "vlan", c.data, skbCB(c.ops, c.protos, 10))
				wantSkb(t, got, c.ret, c.present)
			})
		}
	})
}

func TestHelperSkbHash(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		for _, data := range [][]byte{tcpFrame(64), tcp6Frame(), eth(0x0806, make([]byte, 46))} {
			for _, set := range []uint32{0, 0x12345678} {
				got := checkSkb(t, vm, kern, "hash", data, skbCB(0, set))
				wantSkb(t, got, 0, 15, 3, 0, 1, 0)
			}
		}
	})
}

func TestHelperCsumLevel(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		const query, inc, dec, reset = 1, 2, 3, 4 // level + 1
		b := func(e uint32) uint32 { return e & 0xff }
		for _, c := range []struct {
			name string
			ops  uint32
			ret  uint32
		}{
			{"query none", query, b(errno(eACCES))},
			{"inc query", inc | query<<8, 0},
			{"inc inc query", inc | inc<<8 | query<<16, 1 << 16},
			{"four incs cap at 3", inc | inc<<8 | inc<<16 | inc<<24, 0},
			{"inc dec query", inc | dec<<8 | query<<16, b(errno(eACCES)) << 16},
			{"inc inc dec query", inc | inc<<8 | dec<<16 | query<<24, 0},
			{"inc reset query", inc | reset<<8 | query<<16, b(errno(eACCES)) << 16},
			{"bad level", 5, b(errno(eINVAL))},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "csum", f, skbCB(c.ops, 0x1234))
				wantSkb(t, got, c.ret, nil, errno(eNOTSUPP))
			})
		}
	})
}

func TestHelperSkbLoadBytesRelative(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		w := func(off int) uint32 { return binary.NativeEndian.Uint32(f[off:]) }
		for _, prog := range []string{"load_rel", "sock_load_rel"} {
			for _, c := range []struct {
				name       string
				off, start uint32
				ret        uint32
				w0, w1     uint32
			}{
				{"mac 0", 0, 0, 0, w(0), w(4)},
				{"mac 56", 56, 0, 0, w(56), w(60)},
				{"mac 57", 57, 0, errno(eFAULT), 0, 0},
				{"net 0", 0, 1, 0, w(14), w(18)},
				{"net 42", 42, 1, 0, w(56), w(60)},
				{"net 43", 43, 1, errno(eFAULT), 0, 0},
				{"bad start", 0, 2, errno(eFAULT), 0, 0},
				{"offset over 0xffff", 0x10000, 0, errno(eFAULT), 0, 0},
			} {
				t.Run(prog+"/"+c.name, func(t *testing.T) {
					got := checkSkb(t, vm, kern, prog, f, skbCB(c.off, c.start))
					wantSkb(t, got, c.ret, nil, nil, c.w0, c.w1)
				})
			}
		}
	})
}

func TestHelperSkbInfo(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		// The kernel's test run: a socket of uid 0 in the caller's
		// cgroup, no class id, no route.
		got := checkSkb(t, vm, kern, "info", f, skbCB())
		wantSkb(t, got, 0, 3, 0, 1, 0, 0)
		got = checkSkb(t, vm, kern, "sock_info", f, skbCB())
		wantSkb(t, got, 0, 3, 0)
		// The host's world.
		net := &bpfvm.Net{Socket: &bpfvm.Socket{Cookie: 77, UID: 1000, CgroupID: 9}, ClassID: 0x10002, RouteRealm: 5}
		got = runSkb(t, vm.Programs["info"], f, skbCB(), net)
		wantSkb(t, got, 0, 3, 1000, 1, 0x10002, 5)
		got = runSkb(t, vm.Programs["info"], f, skbCB(), &bpfvm.Net{NoSocket: true})
		wantSkb(t, got, 0, 2, 65534, 0, 0, 0)
	})
}

func TestHelperXDPBytes(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		args := func(off, n, off2 uint32) []byte {
			b := packet(80)
			binary.NativeEndian.PutUint32(b[14:], off)
			binary.NativeEndian.PutUint32(b[18:], n-1)
			binary.NativeEndian.PutUint32(b[22:], off2)
			return b
		}
		pat := func(n int) []byte {
			p := make([]byte, n)
			for i := range p {
				p[i] = 0xa0 + byte(i)
			}
			return p
		}
		b := func(e uint32) uint32 { return e & 0xff }
		for _, c := range []struct {
			name         string
			off, n, off2 uint32
			ret          uint32
			out          func(in []byte) []byte
		}{
			{"load and store", 0, 4, 60, 80 << 16, func(in []byte) []byte { return with(with(in, 40, in[0:4]...), 60, pat(4)...) }},
			{"to the end", 48, 32, 48, 80 << 16, func(in []byte) []byte { return with(with(in, 40, in[48:80]...), 48, pat(32)...) }},
			{"past the end", 49, 32, 49, b(errno(eINVAL)) | b(errno(eINVAL))<<8 | 80<<16, func(in []byte) []byte { return in }},
			{"offset over 0xffff", 0x10000, 1, 0x10000, b(errno(eFAULT)) | b(errno(eFAULT))<<8 | 80<<16, func(in []byte) []byte { return in }},
		} {
			t.Run(c.name, func(t *testing.T) {
				in := args(c.off, c.n, c.off2)
				checkRun(t, vm, kern, "xdp_bytes", in, nil, runOut{c.ret, c.out(in)})
			})
		}
	})
}

func TestHelperCloneRedirect(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		for _, c := range []struct {
			name           string
			ifindex, flags uint32
			ret            uint32
		}{
			{"egress", 1, 0, 0},
			{"ingress", 1, 1, 0},
			{"no device", 0x7fff0000, 0, errno(eINVAL)},
			{"bad flags", 1, 2, errno(eINVAL)},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "clone", f, skbCB(c.ifindex, c.flags))
				wantSkb(t, got, c.ret)
				var want []bpfvm.Clone
				if c.ret == 0 {
					want = []bpfvm.Clone{{Ifindex: c.ifindex, Flags: uint64(c.flags), Packet: f}}
				}
				if len(got.res.Clones) != len(want) || len(want) == 1 && (got.res.Clones[0].Ifindex != want[0].Ifindex || got.res.Clones[0].Flags != want[0].Flags || !bytes.Equal(got.res.Clones[0].Packet, f)) {
					t.Errorf("Clones = %+v, want %+v", got.res.Clones, want)
				}
				if c.ret == 0 && got.data[0] != 0xee {
					t.Errorf("the program's write after the clone is lost: % x", got.data[:4])
				}
			})
		}
		// A host device.
		net := &bpfvm.Net{Devices: []bpfvm.Device{{Ifindex: 7, MTU: 1500, HeaderLen: 14}}}
		if got := runSkb(t, vm.Programs["clone"], f, skbCB(7, 0), net); got.ret != 0 || len(got.res.Clones) != 1 {
			t.Errorf("clone to a host device: %d, %+v", int32(got.ret), got.res.Clones)
		}
	})
}

func TestHelperRedirectNeighPeer(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		nh := bpfvm.NextHop{Family: 2, Addr: [16]byte{10, 0, 0, 9}}
		for _, c := range []struct {
			name  string
			prog  string
			cbs   []uint32
			ret   uint32
			want  bpfvm.Redirect
			valid bool
		}{
			{"neigh with next hop", "redirect_neigh", []uint32{5, 1, 0}, 7, bpfvm.Redirect{Key: 5, Valid: true, Neigh: true, NextHop: nh}, true},
			{"neigh by route", "redirect_neigh", []uint32{5, 0x100, 0}, 7, bpfvm.Redirect{Key: 5, Valid: true, Neigh: true}, true},
			{"neigh flags", "redirect_neigh", []uint32{5, 1, 1}, 2, bpfvm.Redirect{}, false},
			{"peer", "redirect_peer", []uint32{6, 0}, 7, bpfvm.Redirect{Key: 6, Valid: true, Peer: true}, true},
			{"peer flags", "redirect_peer", []uint32{6, 1}, 2, bpfvm.Redirect{}, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, c.prog, f, skbCB(c.cbs...))
				wantSkb(t, got, c.ret)
				if got.res.Redirect != c.want {
					t.Errorf("Redirect = %+v, want %+v", got.res.Redirect, c.want)
				}
			})
		}
	})
}

func TestHelperCheckMTU(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		const lo = 1 << 16 // the loopback device's MTU
		fits := uint32(lo + 14 - 64)
		for _, c := range []struct {
			name                  string
			ifindex, diff, mtu, f uint32
			ret, mtuOut           uint32
		}{
			{"fits", 0, 0, 0, 0, 0, lo},
			{"lo by index", 1, 0, 0, 0, 0, lo},
			{"just fits", 0, fits, 0, 0, 0, lo},
			{"too big", 0, fits + 1, 0, 0, 1, lo},
			{"smaller", 0, uint32(0xffffff00), 0, 0, 0, lo},
			{"L3 length given", 0, 0, lo, 0, 0, lo},
			{"L3 length too big", 0, 1, lo, 0, 1, lo},
			{"no device", 0x7fff0000, 0, 0, 0, errno(19), 0},
			{"bad flags", 0, 0, 0, 2, errno(eINVAL), 0},
			{"segs with diff", 0, 1, 0, 1, errno(eINVAL), 0},
			{"segs", 0, 0, 0, 1, 0, lo},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "check_mtu", f, skbCB(c.ifindex, c.diff, c.mtu, c.f))
				wantSkb(t, got, c.ret, nil, nil, c.mtuOut)
			})
			t.Run("xdp/"+c.name, func(t *testing.T) {
				in := packet(64)
				for i, v := range []uint32{c.ifindex, c.diff, c.mtu, c.f} {
					binary.NativeEndian.PutUint32(in[14+4*i:], v)
				}
				ret, mtu := c.ret&0xffff, c.mtuOut
				if c.f == 1 {
					ret, mtu = errno(eINVAL)&0xffff, 0
				}
				checkRun(t, vm, kern, "xdp_check_mtu", in, nil, runOut{ret | mtu<<16, in})
			})
		}
		net := &bpfvm.Net{Devices: []bpfvm.Device{{Ifindex: 1, MTU: 1500, HeaderLen: 14}, {Ifindex: 9, MTU: 1400}}}
		for _, c := range []struct {
			ifindex, diff, ret, mtu uint32
		}{{0, 1450, 0, 1500}, {0, 1451, 1, 1500}, {9, 1336, 0, 1400}, {9, 1337, 1, 1400}} {
			got := runSkb(t, vm.Programs["check_mtu"], f, skbCB(c.ifindex, c.diff), net)
			wantSkb(t, got, c.ret, nil, nil, c.mtu)
		}
	})
}

func TestHelperTunnel(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		b := func(e uint32) uint32 { return e & 0xff }
		opt := []byte{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0}
		const set, v6, flags = 0x100, 1, 0x10
		inval := b(errno(eINVAL))
		for _, c := range []struct {
			name                           string
			prog                           string
			fl, setFl, lbl                 uint32
			ret                            uint32
			id, remote, tosTTL, label, loc uint32
			out                            []byte
		}{
			{"none", "tunnel", 0, 0, 0, inval | b(errno(eNOENT))<<24, 0, 0, 0, 0, 0, make([]byte, 12)},
			{"set and get", "tunnel", set, 0, 0, 8 << 24, 42, 0x0a000002, 3 | 64<<8, 0, 0x0a000001, opt},
			{"set 28 and get", "tunnel_set28", set, 0, 0, 8 << 24, 42, 0, 3 | 64<<8, 0, 0x0a000001, opt},
			{"set 8 and get", "tunnel_set8", set, 0, 0, 8 << 24, 42, 0, 0, 0, 0x0a000001, opt},
			{"set v6 and get", "tunnel", set, v6, 0x12345, 8 << 24, 42, 0, 3 | 64<<8, 0x12345, 0x01000000, opt},
			{"set v6 label masked", "tunnel", set, v6, 0xfff12345, 8 << 24, 42, 0, 3 | 64<<8, 0x12345, 0x01000000, opt},
			{"label without v6", "tunnel", set, 0, 1, inval | inval<<8 | inval<<16 | b(errno(eNOENT))<<24, 0, 0, 0, 0, 0, make([]byte, 12)},
			{"bad set flags", "tunnel", set, 0x20, 0, inval | inval<<8 | inval<<16 | b(errno(eNOENT))<<24, 0, 0, 0, 0, 0, make([]byte, 12)},
			{"tunnel flags", "tunnel", set | flags, 0, 0, 8 << 24, 42, 0x0a000002, 3 | 64<<8 | 0x05f8<<16, 0, 0x0a000001, opt},
			{"tunnel flags df seq nocsum", "tunnel", set | flags, 2 | 4 | 8, 0, 8 << 24, 42, 0x0a000002, 3 | 64<<8 | 0x0cf9<<16, 0, 0x0a000001, opt},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, c.prog, f, skbCB(0, c.fl, 0, c.setFl, c.lbl))
				wantSkb(t, got, c.ret, c.id, c.remote, c.tosTTL, c.label, c.loc)
				if !bytes.Equal(got.data[14:26], c.out) {
					t.Errorf("options % x, want % x", got.data[14:26], c.out)
				}
				if c.ret&0xff00 == 0 && c.fl&set != 0 && (got.res.Tunnel == nil || got.res.Tunnel.ID != 42 || !bytes.Equal(got.res.Tunnel.Options, opt[:8])) {
					t.Errorf("Result.Tunnel = %+v", got.res.Tunnel)
				}
			})
		}
		// A packet received through a tunnel (bpfvm only: the kernel's
		// test run has none).
		rx := &bpfvm.Tunnel{ID: 0x1234567890, Src: [16]byte{192, 168, 0, 1}, Dst: [16]byte{192, 168, 0, 2}, TOS: 1, TTL: 2, Options: []byte{9, 9, 9, 9}}
		for _, c := range []struct {
			prog                string
			fl                  uint32
			ret, id, remote, lc uint32
		}{
			{"tunnel", 0, 4 << 24, 0x34567890, 0xc0a80001, 0xc0a80002},
			{"tunnel_get8", 0, 4 << 24, 0x34567890, 0xc0a80001, 0},
			{"tunnel_get28", 0, 4 << 24, 0x34567890, 0xc0a80001, 0},
			{"tunnel_get12", 0, inval | 4<<24, 0, 0, 0},
			{"tunnel", v6, b(errno(71)) | 4<<24, 0, 0, 0},
		} {
			t.Run("rx/"+c.prog, func(t *testing.T) {
				got := runSkb(t, vm.Programs[c.prog], f, skbCB(0, c.fl), &bpfvm.Net{Tunnel: rx})
				wantSkb(t, got, c.ret, c.id, c.remote, nil, nil, c.lc)
				if !bytes.Equal(got.data[14:18], []byte{9, 9, 9, 9}) {
					t.Errorf("options % x", got.data[14:26])
				}
			})
		}
	})
}

// TestHelperSkbRepeat checks that repetitions run on the socket buffer
// the one before left, as the kernel's test run's do: the packet grows
// with each, and state such as the VLAN tag carries over.
func TestHelperSkbRepeat(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		for _, c := range []struct {
			prog string
			ctx  []byte
		}{
			{"change_head", skbCB(4)},
			{"vlan", skbCB(1, htons(0x8100), 10)},
			{"adjust_room", skbCB(8, 0, 0, 0, 1)},
		} {
			t.Run(c.prog, func(t *testing.T) {
				out := make([]byte, 1024)
				ctxOut := make([]byte, 192)
				res, err := vm.Programs[c.prog].Execute(&bpfvm.RunOptions{Data: f, DataOut: out, Context: c.ctx, ContextOut: ctxOut, Repeat: 3})
				if err != nil {
					t.Fatal(err)
				}
				if kern == nil {
					return
				}
				kout := make([]byte, 1024)
				kctx := make([]byte, 192)
				opts := &ebpf.RunOptions{Data: f, DataOut: kout, Context: c.ctx, ContextOut: kctx, Repeat: 3}
				ret, err := kern.Programs[c.prog].Run(opts)
				if err != nil {
					t.Fatal(err)
				}
				if uint32(res.R0) != ret || !bytes.Equal(out[:res.DataSize], opts.DataOut) || !bytes.Equal(ctxOut, kctx) {
					t.Errorf("bpfvm %d % x\nctx % x\nkernel %d % x\nctx % x", int32(res.R0), out[:res.DataSize], ctxOut, int32(ret), opts.DataOut, kctx)
				}
			})
		}
	})
}

// TestHelperSkbOtherTypes checks that an unverified program not on a
// socket buffer (which may call any helper) gets an error, not a crash,
// from the socket buffer helpers, and that bpf_skb_store_bytes still
// works there.
func TestHelperSkbOtherTypes(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  ebpf.ProgramType
		asm  string
		err  bool
	}{
		{"xdp change tail", ebpf.XDP, "r2 = 20\nr3 = 0\ncall bpf_skb_change_tail#38", true},
		{"xdp vlan push", ebpf.XDP, "r2 = 0x81\nr3 = 1\ncall bpf_skb_vlan_push#18", true},
		{"xdp tunnel key", ebpf.XDP, "r2 = r10\nr2 += -48\nr3 = 44\nr4 = 0\ncall bpf_skb_get_tunnel_key#20", true},
		{"xdp clone", ebpf.XDP, "r2 = 1\nr3 = 0\ncall bpf_clone_redirect#13", true},
		{"raw check mtu", ebpf.UnspecifiedProgram, "*(u32 *)(r10 -4) = 0\nr2 = 0\nr3 = r10\nr3 += -4\nr4 = 0\nr5 = 0\ncall bpf_check_mtu#163", true},
		{"xdp store bytes invalidating the hash", ebpf.XDP, "*(u32 *)(r10 -4) = 0\nr2 = 0\nr3 = r10\nr3 += -4\nr4 = 4\nr5 = 2\ncall bpf_skb_store_bytes#9", false},
		{"xdp socket cookie", ebpf.XDP, "call bpf_get_socket_cookie#46", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.asm + "\nr0 = 0\nexit")
			if err != nil {
				t.Fatal(err)
			}
			p, err := bpfvm.NewRawProgram("p", c.typ, insns, bpfvm.ProgramOptions{NoVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			_, err = p.Execute(&bpfvm.RunOptions{Data: packet(64)})
			if (err != nil) != c.err {
				t.Errorf("run: %v, want an error: %v", err, c.err)
			}
		})
	}
}

// TestHelperSkbCombo runs sequences of packet-changing helpers, so that
// each sees the headers the ones before moved (the MAC header after
// bpf_skb_change_head, the network header after a VLAN push or an
// encapsulation), and compares packets, lengths, protocols and tags with
// the kernel.
func TestHelperSkbCombo(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f, f6 := tcpFrame(80), tcp6Frame()
		q := eth(0x8100, []byte{0x00, 0x05, 0x08, 0x00}, ipv4(6, 0, tcp(80)))
		const (
			head, push, pop, growMAC, shrinkNet = 1, 2, 3, 4, 5
			to6, to4, tail, encap               = 6, 7, 8, 9
		)
		seq := func(ops ...uint32) uint32 {
			var s uint32
			for i, o := range ops {
				s |= o << (8 * i)
			}
			return s
		}
		for _, c := range []struct {
			name string
			data []byte
			ops  uint32
			len  uint32
		}{
			{"head then grow", f, seq(head, growMAC), 92},
			{"head then to 6", f, seq(head, to6), 104},
			{"head then encap", f, seq(head, encap), 104},
			{"push push then grow", f, seq(push, push, growMAC), 84},
			{"push push pop pop", f, seq(push, push, pop, pop), 80},
			{"push push pop", f, seq(push, push, pop), 80},
			{"tagged: pop then to 6", q, seq(pop, to6), 74},
			{"tagged: to 6", q, seq(to6), 58},
			{"tagged: push then pop", q, seq(push, pop), 54},
			{"tagged: push push pop pop", q, seq(push, push, pop, pop), 54},
			{"encap then encap", f, seq(encap, encap), 100},
			{"encap then tail", f, seq(encap, tail), 100},
			{"encap then shrink", f, seq(encap, shrinkNet), 92},
			{"6 to 4 then grow", f6, seq(to4, growMAC), 62},
			{"4 to 6 to 4", f, seq(to6, to4), 80},
			{"shrink then head then tail", f, seq(shrinkNet, head, tail), 79},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := checkSkb(t, vm, kern, "combo", c.data, skbCB(c.ops))
				wantSkb(t, got, got.ret, c.len)
			})
		}
	})
}

// TestHelperSkbGSO covers GSO packets (gso_size in the context input): the
// test run's have no GSO type, so bpf_skb_adjust_room refuses them, while
// bpf_skb_change_head lets them grow past BPF_SKB_MAX_LEN and
// bpf_check_mtu lets them exceed the MTU.
func TestHelperSkbGSO(t *testing.T) {
	skbConfigsDo(t, "testdata/helpers_skb.o", func(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection) {
		f := tcpFrame(64)
		gso := func(ctx []byte) []byte {
			binary.NativeEndian.PutUint32(ctx[176:], 1400)
			return ctx
		}
		got := checkSkb(t, vm, kern, "adjust_room", f, gso(skbCB(8, 0)))
		wantSkb(t, got, errno(eNOTSUPP), 64)
		got = checkSkb(t, vm, kern, "adjust_room", f, gso(skbCB(uint32(0xfffffff8), 0)))
		wantSkb(t, got, errno(eNOTSUPP), 64)
		got = checkSkb(t, vm, kern, "change_head", f, gso(skbCB(runner.SkbMaxLen-63)))
		wantSkb(t, got, 0, nil, nil, runner.SkbMaxLen+1)
		got = checkSkb(t, vm, kern, "check_mtu", f, gso(skbCB(0, 1<<17)))
		wantSkb(t, got, 0, nil, nil, 1<<16)
		got = checkSkb(t, vm, kern, "check_mtu", f, gso(skbCB(0, 0, 0, 1)))
		wantSkb(t, got, 0, nil, nil, 1<<16)
		// Over a small MTU, a GSO packet passes, but its segments cannot
		// be checked without a transport header.
		small := &bpfvm.Net{Devices: []bpfvm.Device{{Ifindex: 1, MTU: 40, HeaderLen: 14}}}
		got = runSkb(t, vm.Programs["check_mtu"], f, gso(skbCB(0, 0)), small)
		wantSkb(t, got, 0, nil, nil, 40)
		got = runSkb(t, vm.Programs["check_mtu"], f, gso(skbCB(0, 0, 0, 1)), small)
		wantSkb(t, got, errno(eINVAL), nil, nil, 0)
	})
}
