package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/bpfvm/bpfvm"
)

// Errno values the helpers return.
const (
	eACCES = 13
	eFAULT = 14
	eINVAL = 22
	e2BIG  = 7
	eNOENT = 2
	eRANGE = 34
)

// inetChecksum is the Internet checksum of b (RFC 1071) in network order.
func inetChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// tcpChecksum is the checksum of an IPv4 TCP or UDP segment with its
// pseudo-header.
func tcpChecksum(src, dst []byte, proto byte, seg []byte) uint16 {
	ph := append(append(append([]byte(nil), src...), dst...), 0, proto, byte(len(seg)>>8), byte(len(seg)))
	return inetChecksum(append(ph, seg...))
}

// ipv4TCP returns an Ethernet frame with a valid IPv4 header checksum (at
// 24) and TCP checksum (at 50).
func ipv4TCP() []byte {
	f := eth(0x0800, ipv4(6, 0, tcp(80)))
	binary.BigEndian.PutUint16(f[24:], inetChecksum(f[14:34]))
	binary.BigEndian.PutUint16(f[50:], tcpChecksum(f[26:30], f[30:34], 6, f[34:]))
	return f
}

// ne returns the host-order value a program loads for network-order bytes.
func ne(b ...byte) uint32 {
	var v [4]byte
	copy(v[:], b)
	if len(b) == 2 {
		return uint32(binary.NativeEndian.Uint16(v[:]))
	}
	return binary.NativeEndian.Uint32(v[:])
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

func TestHelperSkbBytes(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_pkt.o", bpfvm.CollectionOptions{})
		pkt := packet(64)
		loaded := func(off, n int) []byte {
			buf := make([]byte, 32)
			copy(buf, pkt[off:off+n])
			return with(pkt, 22, buf...)
		}
		zeroed := with(pkt, 22, make([]byte, 32)...)
		for _, c := range []struct {
			name     string
			off, len uint32
			want     runOut
		}{
			{"first 4", 0, 3, runOut{0, loaded(0, 4)}},
			{"last 4", 60, 3, runOut{0, loaded(60, 4)}},
			{"32 bytes", 32, 31, runOut{0, loaded(32, 32)}},
			{"one past the end", 61, 3, runOut{errno(eFAULT), zeroed}},
			{"offset at the end", 64, 0, runOut{errno(eFAULT), zeroed}},
			{"offset over 0xffff", 0x10000, 0, runOut{errno(eFAULT), zeroed}},
			{"offset -1", 0xffffffff, 0, runOut{errno(eFAULT), zeroed}},
		} {
			t.Run("load/"+c.name, func(t *testing.T) {
				checkRun(t, vm, kern, "skb_load", pkt, skbCB(c.off, c.len), c.want)
			})
		}
		pattern := []byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf}
		for _, c := range []struct {
			name            string
			off, len, flags uint32
			want            runOut
		}{
			{"4 at 20", 20, 3, 0, runOut{0, with(pkt, 20, pattern[:4]...)}},
			{"16 at 48", 48, 15, 0, runOut{0, with(pkt, 48, pattern...)}},
			{"over the end", 49, 15, 0, runOut{errno(eFAULT), pkt}},
			{"offset over 0xffff", 0x10000, 0, 0, runOut{errno(eFAULT), pkt}},
			{"recompute csum", 0, 1, 1, runOut{0, with(pkt, 0, 0xa0, 0xa1)}},
			{"invalidate hash", 0, 1, 2, runOut{0, with(pkt, 0, 0xa0, 0xa1)}},
			{"bad flags", 0, 1, 4, runOut{errno(eINVAL), pkt}},
		} {
			t.Run("store/"+c.name, func(t *testing.T) {
				checkRun(t, vm, kern, "skb_store", pkt, skbCB(c.off, c.len, c.flags), c.want)
			})
		}
	})
}

func TestHelperCsumReplace(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_pkt.o", bpfvm.CollectionOptions{})
		f := ipv4TCP()
		// ipCsum and l4Csum return f with its IP or TCP checksum set to that of
		// f with the bytes at off replaced by p; the program changes only the
		// checksum, as real programs do before or after the field.
		ipCsum := func(off int, p ...byte) []byte {
			g := with(f, off, p...)
			return with(f, 24, be16(inetChecksum(with(g, 24, 0, 0)[14:34]))...)
		}
		l4Csum := func(off int, p ...byte) []byte {
			g := with(with(f, off, p...), 50, 0, 0)
			return with(f, 50, be16(tcpChecksum(g[26:30], g[30:34], 6, g[34:]))...)
		}
		src, newSrc := f[26:30], []byte{192, 168, 1, 1}
		// diff is what bpf_csum_diff returns for src -> newSrc.
		diff := uint32(0)
		{
			var s uint64
			s += uint64(^ne(src...))
			s += uint64(ne(newSrc...))
			diff = uint32(s) + uint32(s>>32)
		}
		ttl := f[22:24] // ttl and protocol
		for _, c := range []struct {
			name                 string
			prog                 string
			off, flags, from, to uint32
			want                 runOut
		}{
			{"l3 ttl 2 bytes", "l3_csum", 24, 2, ne(ttl...), ne(63, 6), runOut{0, ipCsum(22, 63, 6)}},
			{"l3 address 4 bytes", "l3_csum", 24, 4, ne(src...), ne(newSrc...), runOut{0, ipCsum(26, newSrc...)}},
			{"l3 by diff", "l3_csum", 24, 0, 0, diff, runOut{0, ipCsum(26, newSrc...)}},
			{"l3 diff with from", "l3_csum", 24, 0, 1, diff, runOut{errno(eINVAL), f}},
			{"l3 size 3", "l3_csum", 24, 3, 0, 0, runOut{errno(eINVAL), f}},
			{"l3 pseudo flag", "l3_csum", 24, 0x12, 0, 0, runOut{errno(eINVAL), f}},
			{"l3 odd offset", "l3_csum", 25, 2, 0, 0, runOut{errno(eFAULT), f}},
			{"l3 past the end", "l3_csum", 54, 2, 0, 0, runOut{errno(eFAULT), f}},
			{"l3 last word", "l3_csum", 52, 2, 0, 0, runOut{0, nil}},
			{"l3 offset over 0xffff", "l3_csum", 0x10000, 2, 0, 0, runOut{errno(eFAULT), f}},
			{"l4 port 2 bytes", "l4_csum", 50, 2, ne(0, 80), ne(0x1f, 0x90), runOut{0, l4Csum(36, 0x1f, 0x90)}},
			{"l4 pseudo address", "l4_csum", 50, 4 | 0x10, ne(src...), ne(newSrc...), runOut{0, l4Csum(26, newSrc...)}},
			{"l4 pseudo by diff", "l4_csum", 50, 0x10, 0, diff, runOut{0, l4Csum(26, newSrc...)}},
			{"l4 ipv6 flag", "l4_csum", 50, 4 | 0x10 | 0x80, ne(src...), ne(newSrc...), runOut{0, l4Csum(26, newSrc...)}},
			{"l4 bad flags", "l4_csum", 50, 0x100 | 2, 0, 0, runOut{errno(eINVAL), f}},
			{"l4 diff with from", "l4_csum", 50, 0, 1, 0, runOut{errno(eINVAL), f}},
			{"l4 odd offset", "l4_csum", 51, 2, 0, 0, runOut{errno(eFAULT), f}},
		} {
			t.Run(c.name, func(t *testing.T) {
				checkRun(t, vm, kern, c.prog, f, skbCB(c.off, c.flags, c.from, c.to), c.want)
			})
		}

		// A UDP-style checksum that computes to 0 is written as 0xffff with
		// BPF_F_MARK_MANGLED_0, and stays 0 without it; a zero checksum is
		// left alone unless BPF_F_MARK_ENFORCE.
		g := with(f, 50, 0x34, 0x12)
		zero := with(f, 50, 0, 0)
		for _, c := range []struct {
			name  string
			data  []byte
			flags uint32
			from  uint32
			to    uint32
			want  []byte
		}{
			{"result zero", g, 4, 0, 0x1234, with(f, 50, 0, 0)},
			{"result zero mangled", g, 4 | 0x20, 0, 0x1234, with(f, 50, 0xff, 0xff)},
			{"zero kept", zero, 4 | 0x20, 0, 0x1234, zero},
			{"zero enforced", zero, 4 | 0x20 | 0x40, 0, 0x1234, nil},
		} {
			t.Run("mangled/"+c.name, func(t *testing.T) {
				checkRun(t, vm, kern, "l4_csum", c.data, skbCB(50, c.flags, c.from, c.to), runOut{0, c.want})
			})
		}
	})
}

func TestHelperCsumDiff(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_pkt.o", bpfvm.CollectionOptions{})
		pkt := packet(80) // from: bytes 14-45, to: bytes 46-77
		for _, c := range []struct {
			name           string
			from, to, seed uint32
			want           uint32
		}{
			{"seed only", 0, 0, 0x12345678, 0x68ac},
			{"to 4", 0, 4, 0, 0x605e},
			{"from 4", 4, 0, 0, 0xdfe1},
			{"diff 4", 4, 4, 0, 0x4040},
			{"diff 4 seeded", 4, 4, 0xffff, 0x4040},
			{"to 12 seeded", 0, 12, 0x1234, 0x4b67},
			{"diff 32", 32, 32, 0, 0x0202},
			{"odd sizes", 3, 5, 0, 0x5172},
			{"too big", 33, 0, 0, 0xffffffff},
		} {
			t.Run(c.name, func(t *testing.T) {
				checkRun(t, vm, kern, "csum_diff", pkt, skbCB(c.from, c.to, c.seed), runOut{c.want, pkt})
			})
		}
	})
}

func TestHelperXDPAdjust(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_pkt.o", bpfvm.CollectionOptions{})
		args := func(meta, head, tail int32) []byte {
			b := packet(64)
			binary.NativeEndian.PutUint32(b[14:], uint32(meta))
			binary.NativeEndian.PutUint32(b[18:], uint32(head))
			binary.NativeEndian.PutUint32(b[22:], uint32(tail))
			return b
		}
		ret := func(meta, head, tail uint32) uint32 { return meta | head<<8 | tail<<16 }
		// meta is a metadata area of n bytes as the program marks it; the
		// kernel's test run returns it in front of the packet.
		meta := func(n int) []byte { return append([]byte{0xee, 0xee, 0xee, 0xee}, make([]byte, n-4)...) }
		for _, c := range []struct {
			name             string
			meta, head, tail int32
			want             uint32
			// out builds the expected packet from the input.
			out func(in []byte) []byte
			// vmOnly marks cases where bpfvm's limits differ from the kernel's.
			vmOnly bool
		}{
			{"nothing", 0, 0, 0, 0, func(in []byte) []byte { return in }, false},
			{"head -14", 0, -14, 0, 0, func(in []byte) []byte { return append(make([]byte, 14), in...) }, false},
			{"head +10", 0, 10, 0, 0, func(in []byte) []byte { return in[10:] }, false},
			{"head keeps ETH_HLEN", 0, 50, 0, 0, func(in []byte) []byte { return in[50:] }, false},
			{"head past ETH_HLEN", 0, 51, 0, ret(0, eINVAL, 0), func(in []byte) []byte { return in }, false},
			{"head whole headroom", 0, -216, 0, 0, func(in []byte) []byte { return append(make([]byte, 216), in...) }, false},
			{"head into xdp_frame", 0, -217, 0, ret(0, eINVAL, 0), func(in []byte) []byte { return in }, false},
			{"tail -50", 0, 0, -50, 0, func(in []byte) []byte { return in[:14] }, false},
			{"tail past ETH_HLEN", 0, 0, -51, ret(0, 0, eINVAL), func(in []byte) []byte { return in }, false},
			{"tail +10 zeroed", 0, 0, 10, 0, func(in []byte) []byte { return append(in, make([]byte, 10)...) }, false},
			{"tail +256", 0, 0, 256, 0, func(in []byte) []byte { return append(in, make([]byte, 256)...) }, false},
			{"tail +257", 0, 0, 257, ret(0, 0, eINVAL), func(in []byte) []byte { return in }, true},
			{"head and tail", 0, -4, 4, 0, func(in []byte) []byte { return append(append(make([]byte, 4), in...), 0, 0, 0, 0) }, false},
			{"meta -4", -4, 0, 0, 0, func(in []byte) []byte { return append(meta(4), in...) }, false},
			{"meta -32", -32, 0, 0, 0, func(in []byte) []byte { return append(meta(32), in...) }, false},
			{"meta -36", -36, 0, 0, 0, func(in []byte) []byte { return append(meta(36), in...) }, false},
			{"meta whole headroom", -216, 0, 0, 0, func(in []byte) []byte { return append(meta(216), in...) }, false},
			{"meta into xdp_frame", -220, 0, 0, ret(eINVAL, 0, 0), func(in []byte) []byte { return in }, false},
			{"meta unaligned", -3, 0, 0, ret(eACCES, 0, 0), func(in []byte) []byte { return in }, false},
			{"meta past data", 4, 0, 0, ret(eINVAL, 0, 0), func(in []byte) []byte { return in }, false},
			{"meta moves with head", -8, -16, 0, 0, func(in []byte) []byte { return append(append(meta(8), make([]byte, 16)...), in...) }, false},
			{"meta limits head", -32, -200, 0, ret(0, eINVAL, 0), func(in []byte) []byte { return append(meta(32), in...) }, false},
			{"meta and head", -32, -184, 0, 0, func(in []byte) []byte { return append(append(meta(32), make([]byte, 184)...), in...) }, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				in := args(c.meta, c.head, c.tail)
				k := kern
				if c.vmOnly {
					k = nil
				}
				checkRun(t, vm, k, "xdp_adjust", in, nil, runOut{c.want, c.out(in)})
			})
		}
	})
}

func TestHelperRedirect(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_pkt.o", bpfvm.CollectionOptions{})
		for _, c := range []struct {
			name           string
			prog           string
			ifindex, flags uint32
			want           uint32
		}{
			{"xdp", "xdp_redirect", 5, 0, 4},
			{"xdp flags", "xdp_redirect", 5, 1, 0},
			{"tc", "tc_redirect", 7, 0, 7},
			{"tc ingress", "tc_redirect", 7, 1, 7},
			{"tc bad flags", "tc_redirect", 7, 2, 2},
		} {
			t.Run(c.name, func(t *testing.T) {
				data, ctx := packet(64), any(skbCB(c.ifindex, c.flags))
				if c.prog == "xdp_redirect" {
					binary.NativeEndian.PutUint32(data[14:], c.ifindex)
					binary.NativeEndian.PutUint32(data[18:], c.flags)
					ctx = nil
				}
				checkRun(t, vm, kern, c.prog, data, ctx, runOut{c.want, data})
				res, err := vm.Programs[c.prog].Execute(&bpfvm.RunOptions{Data: data, Context: ctx})
				if err != nil {
					t.Fatal(err)
				}
				want := bpfvm.Redirect{}
				if c.want == 4 || c.want == 7 {
					want = bpfvm.Redirect{Key: uint64(c.ifindex), Flags: uint64(c.flags), Valid: true}
				}
				if res.Redirect != want {
					t.Errorf("Redirect = %+v, want %+v", res.Redirect, want)
				}
			})
		}
	})
}

var _ = bytes.Equal

// TestHelperSocketLoad checks that a socket filter's offsets count from the
// network header, as its packet starts there.
func TestHelperSocketLoad(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_pkt.o", bpfvm.CollectionOptions{})
		pkt := packet(64) // the network header starts at byte 14
		for _, c := range []struct {
			off  uint32
			want uint32
		}{
			{0, binary.NativeEndian.Uint32(pkt[14:])},
			{46, binary.NativeEndian.Uint32(pkt[60:])},
			{47, errno(eFAULT)},
		} {
			got := run(t, vm.Programs["sock_load"], pkt, skbCB(c.off))
			if got.ret != c.want {
				t.Errorf("offset %d: got %#x, want %#x", c.off, got.ret, c.want)
			}
			if k, ok := kernelRun(t, kern, "sock_load", pkt, skbCB(c.off)); ok && k.ret != got.ret {
				t.Errorf("offset %d: kernel returned %#x, bpfvm %#x", c.off, k.ret, got.ret)
			}
		}
	})
}
