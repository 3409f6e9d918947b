package bpfvm_test

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// dpack is testdata/dynptr.c's pack: two 16-bit results in one.
func dpack(a, b int32) uint32 { return uint32(a&0xffff)<<16 | uint32(b&0xffff) }

// xdpArgs returns a 64-byte packet (byte i is i) with the four u32
// arguments of dynptr.c's XDP programs after the Ethernet header.
func xdpArgs(a ...uint32) []byte {
	p := packet(64)
	for i, v := range a {
		binary.NativeEndian.PutUint32(p[14+4*i:], v)
	}
	return p
}

// Dynptrs at run time on both engines, checked and verified: the kernel's
// return values and packet contents, compared with the running kernel's
// test runs where bpf() is permitted.
func TestDynptrRun(t *testing.T) {
	const e2big, erange = 7, 34
	pkt := packet(64)
	type c struct {
		name, prog string
		data       []byte
		ctx        []byte
		want       runOut
	}
	cases := []c{
		{"skb read write", "skb_rw", pkt, skbCB(0, 0, 32, 0), runOut{0, with(pkt, 32, pkt[:8]...)}},
		{"skb read last", "skb_rw", pkt, skbCB(56, 0, 0, 0), runOut{0, with(pkt, 0, pkt[56:]...)}},
		{"skb read past the end", "skb_rw", pkt, skbCB(57, 0, 0, 0), runOut{dpack(-e2big, 0), with(pkt, 0, make([]byte, 8)...)}},
		{"skb read offset -1", "skb_rw", pkt, skbCB(0xffffffff, 0, 0, 0), runOut{dpack(-e2big, 0), nil}},
		{"skb read flags", "skb_rw", pkt, skbCB(0, 1, 0, 0), runOut{dpack(-eINVAL, 0), nil}},
		{"skb write past the end", "skb_rw", pkt, skbCB(0, 0, 57, 0), runOut{dpack(0, -e2big), pkt}},
		{"skb write csum flag", "skb_rw", pkt, skbCB(0, 0, 8, 1), runOut{0, with(pkt, 8, pkt[:8]...)}},
		{"skb write bad flags", "skb_rw", pkt, skbCB(0, 0, 8, 4), runOut{dpack(0, -eINVAL), pkt}},
		{"skb slice", "skb_slice", pkt, skbCB(0, 8, 0), runOut{0x03020100, with(pkt, 8, 0xab, 0xab)}},
		{"skb slice buffer", "skb_slice", pkt, skbCB(4, 62, 1), runOut{0x07060504, with(pkt, 62, 0xab, 0xab)}},
		{"skb slice past the end", "skb_slice", pkt, skbCB(61, 63, 0), runOut{uint32(0xfffffffe), pkt}},
		{"skb adjust clone", "skb_adjust", pkt, skbCB(4, 20, 2), runOut{dpack(0, 16) ^ 6<<8, nil}},
		{"skb adjust start past end", "skb_adjust", pkt, skbCB(20, 4, 0), runOut{dpack(-eINVAL, 64), nil}},
		{"skb adjust past size", "skb_adjust", pkt, skbCB(0, 65, 0), runOut{dpack(-erange, 64), nil}},
		{"skb from flags 0", "skb_flags", pkt, skbCB(0), runOut{0, nil}},
		{"skb from flags 1", "skb_flags", pkt, skbCB(1), runOut{dpack(-eINVAL, 1), nil}},
		{"socket filter read-only", "filter_rdonly", pkt, nil, runOut{dpack(-eINVAL, 1), nil}},
		{"xdp read write", "xdp_rw", xdpArgs(40, 0, 48, 0), nil, runOut{0, with(xdpArgs(40, 0, 48, 0), 48, pkt[40:48]...)}},
		{"xdp read past the end", "xdp_rw", xdpArgs(57, 0, 48, 0), nil, runOut{dpack(-e2big, 0), nil}},
		{"xdp write flags", "xdp_rw", xdpArgs(40, 0, 48, 1), nil, runOut{dpack(0, -eINVAL), nil}},
		{"xdp slice", "xdp_slice", xdpArgs(40, 50, 0, 0), nil, runOut{0x2b2a2928, with(xdpArgs(40, 50, 0, 0), 50, 0xab, 0xab)}},
		{"xdp slice past the end", "xdp_slice", xdpArgs(61, 63, 1, 0), nil, runOut{uint32(0xfffffffe), nil}},
		{"local write data", "local", xdpArgs(16, 0, 4, 4), nil, runOut{dpack(0, 0) ^ 4<<8 ^ 16<<24, nil}},
		{"local write past size", "local", xdpArgs(16, 0, 13, 0), nil, runOut{dpack(0, -e2big) ^ 16<<24, nil}},
		{"local flags", "local", xdpArgs(16, 1, 0, 0), nil, runOut{dpack(-eINVAL, -eINVAL) ^ 0x8000, nil}},
		{"local empty", "local", xdpArgs(0, 0, 0, 0), nil, runOut{dpack(0, -e2big) ^ 0x8000, nil}},
		{"local data past size", "local", xdpArgs(16, 0, 0, 13), nil, runOut{0x8000, nil}},
		{"ring submit", "ring", xdpArgs(16, 0, 0, 0), nil, runOut{0, nil}},
		{"ring discard", "ring", xdpArgs(16, 0, 13, 1), nil, runOut{dpack(0, -e2big), nil}},
		{"ring flags", "ring", xdpArgs(16, 1, 0, 0), nil, runOut{dpack(-eINVAL, -eINVAL), nil}},
		{"ring too big", "ring", xdpArgs(5000, 0, 0, 0), nil, runOut{dpack(-eINVAL, -eINVAL), nil}},
		{"ring over max size", "ring", xdpArgs(1<<24, 0, 0, 0), nil, runOut{dpack(-e2big, -eINVAL), nil}},
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		t.Run(e.String(), func(t *testing.T) {
			modes(t, func(t *testing.T, noVerify bool) {
				opts := bpfvm.CollectionOptions{}
				opts.Programs.Engine = e
				vm, kern := loadHelpers(t, noVerify, "testdata/dynptr.o", opts)
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						var ctx any
						if c.ctx != nil {
							ctx = c.ctx
						}
						checkRun(t, vm, kern, c.prog, c.data, ctx, c.want)
					})
				}
			})
		})
	}
}

// BenchmarkDynptrLoad loads testdata/dynptr.o, ten dynptr-heavy programs
// and their two maps, into bpfvm (verification with the interpreter, so
// no compile) and into the kernel: compare the two in one run with
// go test -run XXX -bench DynptrLoad -count 5.
func BenchmarkDynptrLoad(b *testing.B) {
	const file = "testdata/dynptr.o"
	b.Run("bpfvm", func(b *testing.B) {
		spec, err := loader.LoadCollectionSpec(file)
		if err != nil {
			b.Fatal(err)
		}
		opts := bpfvm.CollectionOptions{}
		opts.Programs.Engine = bpfvm.EngineInterpreter
		for b.Loop() {
			c, err := bpfvm.NewCollectionWithOptions(spec, opts)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("kernel", func(b *testing.B) {
		if !kernelAvailable(b) {
			b.Skip("bpf() not permitted")
		}
		spec, err := ebpf.LoadCollectionSpec(file)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			c, err := ebpf.NewCollection(spec)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
}
