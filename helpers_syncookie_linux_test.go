package bpfvm_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
)

// cookieReq is testdata/syncookie.c's struct req, cookieRes its struct res.
type cookieReq struct{ Op, IPHLen, THLen, Delta uint32 }

type cookieRes struct {
	Gen, Check int64
	Found, Pad uint32
}

// cookieSeg describes a test packet: addresses, ports, the TCP flags and
// options, and the IP version to write (0: the addresses').
type cookieSeg struct {
	src, dst     netip.AddrPort
	seq, ack     uint32
	flags        byte
	opts         []byte
	version, off byte // off: the data offset to write, 0 for the header's
}

// packet builds the segment with 64 bytes of room after each header.
func (s cookieSeg) packet() []byte {
	be := binary.BigEndian
	th := make([]byte, 20+len(s.opts))
	be.PutUint16(th[0:], s.src.Port())
	be.PutUint16(th[2:], s.dst.Port())
	be.PutUint32(th[4:], s.seq)
	be.PutUint32(th[8:], s.ack)
	off := s.off
	if off == 0 {
		off = byte(len(th) / 4)
	}
	th[12] = off << 4
	th[13] = s.flags
	be.PutUint16(th[14:], 65535)
	copy(th[20:], s.opts)
	th = append(th, make([]byte, 64)...)
	var ip []byte
	ethType := uint16(0x0800)
	if s.dst.Addr().Is4() {
		ip = make([]byte, 20)
		ip[0] = 0x45
		be.PutUint16(ip[2:], uint16(20+len(th)))
		ip[8], ip[9] = 64, 6
		src, dst := s.src.Addr().As4(), s.dst.Addr().As4()
		copy(ip[12:], src[:])
		copy(ip[16:], dst[:])
	} else {
		ethType = 0x86dd
		ip = make([]byte, 40)
		ip[0] = 0x60
		be.PutUint16(ip[4:], uint16(len(th)))
		ip[6], ip[7] = 6, 64
		src, dst := s.src.Addr().As16(), s.dst.Addr().As16()
		copy(ip[8:], src[:])
		copy(ip[24:], dst[:])
	}
	if s.version != 0 {
		ip[0] = s.version<<4 | ip[0]&0xf
	}
	return eth(ethType, ip, th)
}

// TestSyncookieKernel compares the TCP syncookie helpers with the kernel's
// test run in a network namespace of its own, whose tcp_syncookies each
// case sets: every validation error in the kernel's order, the MSS a
// cookie encodes, and the verdict on the ACK that answers a cookie (made
// and checked by the same side: bpfvm's cookies are its own). Both
// engines, verified and checked.
func TestSyncookieKernel(t *testing.T) {
	const (
		gen, check, rawGen, rawCheck, genCheck, rawGenCheck = 0, 1, 2, 3, 4, 5
		syn, ack, fin, rst                                  = 0x02, 0x10, 0x01, 0x04
	)
	mss := func(v uint16) []byte { return []byte{2, 4, byte(v >> 8), byte(v)} }
	lo4, lo6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")
	// The world's ports, the kernel's where it runs.
	p4, p6, pc := uint16(8080), uint16(8081), uint16(40000)
	client := netip.AddrPortFrom(lo4, 50000)
	client6 := netip.AddrPortFrom(lo6, 50000)
	type tc = cookieCase
	cases := func() []tc {
		l4, l6 := netip.AddrPortFrom(lo4, p4), netip.AddrPortFrom(lo6, p6)
		estab := netip.AddrPortFrom(lo4, pc)
		s4 := cookieSeg{src: client, dst: l4, seq: 1000, flags: syn}
		s6 := cookieSeg{src: client6, dst: l6, seq: 7777, flags: syn}
		a4 := cookieSeg{src: client, dst: l4, seq: 1001, ack: 12345, flags: ack}
		with := func(s cookieSeg, f func(*cookieSeg)) cookieSeg { f(&s); return s }
		r := func(op, iph, th uint32) cookieReq { return cookieReq{Op: op, IPHLen: iph, THLen: th} }
		return []tc{
			{"raw gen", 1, s4, r(rawGen, 20, 20)},
			{"raw gen mss 1460", 1, with(s4, func(s *cookieSeg) { s.opts = mss(1460) }), r(rawGen, 20, 24)},
			{"raw gen mss 1400", 1, with(s4, func(s *cookieSeg) { s.opts = mss(1400) }), r(rawGen, 20, 24)},
			{"raw gen mss 100", 1, with(s4, func(s *cookieSeg) { s.opts = mss(100) }), r(rawGen, 20, 24)},
			{"raw gen nop nop mss", 1, with(s4, func(s *cookieSeg) { s.opts = append([]byte{1, 1, 1, 1}, mss(1440)...) }), r(rawGen, 20, 28)},
			{"raw gen eol first", 1, with(s4, func(s *cookieSeg) { s.opts = append([]byte{0, 1, 1, 1}, mss(1440)...) }), r(rawGen, 20, 28)},
			{"raw gen bad option", 1, with(s4, func(s *cookieSeg) { s.opts = []byte{8, 1, 2, 4, 5, 0xb4, 0, 0} }), r(rawGen, 20, 28)},
			{"raw gen th_len not doff", 1, with(s4, func(s *cookieSeg) { s.opts = mss(1460) }), r(rawGen, 20, 20)},
			{"raw gen th_len short", 1, s4, r(rawGen, 20, 12)},
			{"raw gen of an ack", 1, a4, r(rawGen, 20, 20)},
			{"raw round trip", 1, s4, r(rawGenCheck, 20, 20)},
			{"raw round trip mss", 1, with(s4, func(s *cookieSeg) { s.opts = mss(1300) }), r(rawGenCheck, 20, 24)},
			{"raw round trip other mss index", 1, s4, cookieReq{Op: rawGenCheck, IPHLen: 20, THLen: 20, Delta: 1}},
			{"raw round trip wrong ack", 1, s4, cookieReq{Op: rawGenCheck, IPHLen: 20, THLen: 20, Delta: 1 << 16}},
			{"raw round trip old minute", 1, s4, cookieReq{Op: rawGenCheck, IPHLen: 20, THLen: 20, Delta: 3 << 24}},
			{"raw check forged", 1, a4, r(rawCheck, 20, 20)},
			{"raw gen v6", 1, s6, r(rawGen, 40, 20)},
			{"raw gen v6 mss 9000", 1, with(s6, func(s *cookieSeg) { s.opts = mss(9000) }), r(rawGen, 40, 24)},
			{"raw gen v6 mss 1460", 1, with(s6, func(s *cookieSeg) { s.opts = mss(1460) }), r(rawGen, 40, 24)},
			{"raw round trip v6", 1, s6, r(rawGenCheck, 40, 20)},
			{"raw round trip v6 wrong ack", 1, s6, cookieReq{Op: rawGenCheck, IPHLen: 40, THLen: 20, Delta: 7}},
			// The socket helpers, tcp_syncookies 1 and no SYN flood.
			{"gen no flood", 1, s4, r(gen, 20, 20)},
			{"check no overflow", 1, a4, r(check, 20, 20)},
			{"gen th_len not doff", 1, s4, r(gen, 20, 24)},
			{"gen th_len short", 1, s4, r(gen, 20, 8)},
			{"gen of an ack", 1, a4, r(gen, 20, 20)},
			{"gen of a syn-ack", 1, with(s4, func(s *cookieSeg) { s.flags = syn | ack }), r(gen, 20, 20)},
			{"gen of a syn-fin", 1, with(s4, func(s *cookieSeg) { s.flags = syn | fin }), r(gen, 20, 20)},
			{"gen iph short", 1, s4, r(gen, 12, 20)},
			{"gen ip version 7", 1, with(s4, func(s *cookieSeg) { s.version = 7 }), r(gen, 20, 20)},
			{"gen to a connection", 1, cookieSeg{src: client, dst: estab, seq: 1, flags: syn}, r(gen, 20, 20)},
			{"check th short", 1, a4, r(check, 20, 12)},
			{"check of a syn", 1, with(a4, func(s *cookieSeg) { s.flags = syn }), r(check, 20, 20)},
			{"check of a rst-ack", 1, with(a4, func(s *cookieSeg) { s.flags = ack | rst }), r(check, 20, 20)},
			{"check iph short", 1, a4, r(check, 10, 20)},
			{"check to a connection", 1, cookieSeg{src: client, dst: estab, seq: 1, ack: 5, flags: ack}, r(check, 20, 20)},
			// tcp_syncookies 0 and 2.
			{"gen cookies off", 0, s4, r(gen, 20, 20)},
			{"check cookies off", 0, a4, r(check, 20, 20)},
			{"gen always", 2, s4, r(gen, 20, 20)},
			{"gen always mss", 2, with(s4, func(s *cookieSeg) { s.opts = mss(1440) }), r(gen, 20, 24)},
			{"gen always iph short", 2, s4, r(gen, 19, 20)},
			{"gen always version 7", 2, with(s4, func(s *cookieSeg) { s.version = 7 }), r(gen, 20, 20)},
			{"round trip", 2, s4, r(genCheck, 20, 20)},
			{"round trip other mss index", 2, s4, cookieReq{Op: genCheck, IPHLen: 20, THLen: 20, Delta: 3}},
			{"round trip wrong ack", 2, s4, cookieReq{Op: genCheck, IPHLen: 20, THLen: 20, Delta: 1 << 20}},
			{"round trip v6 wrong ack", 2, s6, cookieReq{Op: genCheck, IPHLen: 40, THLen: 20, Delta: 12345}},
			{"gen always v6", 2, s6, r(gen, 40, 20)},
			{"gen always v6 iph 20", 2, s6, r(gen, 20, 20)},
			{"gen always v6 as version 4", 2, with(s6, func(s *cookieSeg) { s.version = 4 }), r(gen, 40, 20)},
			{"round trip v6", 2, s6, r(genCheck, 40, 20)},
		}
	}
	type result = cookieResult
	// same compares a gen result: the same error, or a cookie of the
	// same MSS.
	same := func(a, b result) bool {
		if a.found != b.found || a.check != b.check || (a.gen < 0) != (b.gen < 0) {
			return false
		}
		if a.gen < 0 {
			return a.gen == b.gen
		}
		return a.gen>>32 == b.gen>>32
	}
	var want []result
	if os.Getuid() == 0 && haveKernel(t) {
		if _, err := exec.LookPath("ip"); err == nil {
			want = syncookieKernel(t, func(l4, l6, c uint16) []tc {
				p4, p6, pc = l4, l6, c
				return cases()
			})
		}
	}
	cs := cases()
	world := func(mode uint8) *bpfvm.Net {
		return &bpfvm.Net{
			Syncookies: &bpfvm.Syncookies{Mode: mode, Secret: [16]byte{1, 2, 3}, Minute: 7},
			Sockets: []bpfvm.Socket{
				{Protocol: 6, Local: netip.AddrPortFrom(lo4, p4)},
				{Protocol: 6, Local: netip.AddrPortFrom(lo6, p6), V6Only: true},
				{Protocol: 6, Local: netip.AddrPortFrom(lo4, pc), Remote: client},
			},
		}
	}
	compared, agreed := 0, 0
	for name, e := range map[string]bpfvm.Engine{"interp": bpfvm.EngineInterpreter, "jit": bpfvm.EngineJIT} {
		t.Run(name, func(t *testing.T) {
			modes(t, func(t *testing.T, noVerify bool) {
				vm := loadVM(t, noVerify, "testdata/syncookie.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}})
				for i, c := range cs {
					if err := vm.Maps["req"].Put(uint32(0), c.req); err != nil {
						t.Fatal(err)
					}
					res, err := vm.Programs["cookie"].Execute(&bpfvm.RunOptions{Data: c.seg.packet(), Net: world(c.mode)})
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					var o cookieRes
					if err := vm.Maps["out"].Lookup(uint32(0), &o); err != nil {
						t.Fatal(err)
					}
					if res.R0 != 0 {
						t.Fatalf("%s: returned %d", c.name, res.R0)
					}
					got := result{o.Gen, o.Check, o.Found}
					if want == nil {
						continue
					}
					compared++
					if !same(got, want[i]) {
						t.Errorf("%s: bpfvm gen %#x check %d found %d, kernel gen %#x check %d found %d",
							c.name, got.gen, got.check, got.found, want[i].gen, want[i].check, want[i].found)
						continue
					}
					agreed++
				}
			})
		})
	}
	if compared > 0 {
		t.Logf("%d syncookie runs compared with the kernel's, %d agree", compared, agreed)
	}
}

// cookieResult is what a run of testdata/syncookie.c's cookie stores.
type cookieResult struct {
	gen, check int64
	found      uint32
}

// cookieCase is a case of TestSyncookieKernel.
type cookieCase struct {
	name string
	mode uint8 // tcp_syncookies
	seg  cookieSeg
	req  cookieReq
}

// syncookieKernel runs the cases cases gives (with the ports of the
// sockets) in a network namespace of its own: a TCP listener on
// 127.0.0.1, an IPv6-only one on ::1, and the server end of a connection
// from 127.0.0.1:50000 (its listener closed). It returns nil where that
// cannot be set up.
func syncookieKernel(t *testing.T, cases func(l4, l6, conn uint16) []cookieCase) []cookieResult {
	kern := kernelCollection(t, "testdata/syncookie.o")
	if kern == nil {
		return nil
	}
	var out []cookieResult
	done := make(chan string)
	go func() {
		runtime.LockOSThread() // dies with the goroutine, and the namespace with it
		skip := func(err error) { done <- "skip: " + err.Error() }
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			skip(err)
			return
		}
		if o, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			skip(fmt.Errorf("%v: %s", err, o))
			return
		}
		var lc net.ListenConfig
		lc.SetMultipathTCP(false)
		listen := func(network, addr string) net.Listener {
			l, err := lc.Listen(context.Background(), network, addr)
			if err != nil {
				skip(err)
				return nil
			}
			return l
		}
		l4 := listen("tcp4", "127.0.0.1:0")
		if l4 == nil {
			return
		}
		defer l4.Close()
		l6 := listen("tcp6", "[::1]:0")
		if l6 == nil {
			return
		}
		defer l6.Close()
		le := listen("tcp4", "127.0.0.1:0")
		if le == nil {
			return
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}}
		cc, err := d.Dial("tcp4", le.Addr().String())
		if err != nil {
			le.Close()
			skip(err)
			return
		}
		defer cc.Close()
		srv, err := le.Accept()
		le.Close() // only the connection stays on its port
		if err != nil {
			skip(err)
			return
		}
		defer srv.Close()
		port := func(a net.Addr) uint16 { return uint16(a.(*net.TCPAddr).Port) }
		for _, c := range cases(port(l4.Addr()), port(l6.Addr()), port(srv.LocalAddr())) {
			if err := os.WriteFile("/proc/sys/net/ipv4/tcp_syncookies", []byte{'0' + c.mode}, 0); err != nil {
				skip(err)
				return
			}
			if err := kern.Maps["req"].Put(uint32(0), c.req); err != nil {
				done <- err.Error()
				return
			}
			ret, err := kern.Programs["cookie"].Run(&ebpf.RunOptions{Data: c.seg.packet()})
			if err != nil || ret != 0 {
				done <- fmt.Sprintf("%s: kernel run: %d %v", c.name, ret, err)
				return
			}
			var o cookieRes
			if err := kern.Maps["out"].Lookup(uint32(0), &o); err != nil {
				done <- err.Error()
				return
			}
			out = append(out, cookieResult{o.Gen, o.Check, o.Found})
		}
		done <- ""
	}()
	if msg := <-done; msg != "" {
		if len(msg) > 5 && msg[:5] == "skip:" {
			t.Logf("kernel oracle skipped: %s", msg)
			return nil
		}
		t.Fatal(msg)
	}
	return out
}
