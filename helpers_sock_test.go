package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// sockReq is struct req of testdata/helpers_sock.c.
type sockReq struct {
	helper, size uint32
	netns, flags uint64
	src, dst     netip.AddrPort
}

// packet returns the request after an Ethernet header.
func (q sockReq) packet() []byte {
	b := make([]byte, 14+64+16) // struct req is 64 bytes
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	le := binary.NativeEndian
	r := b[14:]
	le.PutUint32(r[0:], q.helper)
	le.PutUint32(r[4:], q.size)
	le.PutUint64(r[8:], q.netns)
	le.PutUint64(r[16:], q.flags)
	t := r[24:]
	be := binary.BigEndian
	if q.src.Addr().Is4() {
		s, d := q.src.Addr().As4(), q.dst.Addr().As4()
		copy(t[0:], s[:])
		copy(t[4:], d[:])
		be.PutUint16(t[8:], q.src.Port())
		be.PutUint16(t[10:], q.dst.Port())
	} else {
		s, d := q.src.Addr().As16(), q.dst.Addr().As16()
		copy(t[0:], s[:])
		copy(t[16:], d[:])
		be.PutUint16(t[32:], q.src.Port())
		be.PutUint16(t[34:], q.dst.Port())
	}
	return b
}

// hostSockets opens sockets on this machine and describes them as bpfvm's
// socket table: a TCP listener on 127.0.0.1 with a connection to it (both
// ends), a TCP listener on ::1, a dual-stack one on [::], a UDP socket on
// 127.0.0.1 and one connected to it.
func hostSockets(t *testing.T) (socks []bpfvm.Socket, addrs map[string]netip.AddrPort) {
	t.Helper()
	addrs = map[string]netip.AddrPort{}
	ap := func(a net.Addr) netip.AddrPort {
		p := addrPort(a)
		if !p.IsValid() {
			t.Fatalf("address %v", a)
		}
		return p
	}
	listen := func(name, network, addr string) net.Listener {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("listen %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { l.Close() })
		addrs[name] = ap(l.Addr())
		return l
	}
	l4 := listen("l4", "tcp4", "127.0.0.1:0")
	socks = append(socks, bpfvm.Socket{Protocol: 6, Local: addrs["l4"]})
	c, s := connect(t, l4)
	addrs["client"], addrs["server"] = ap(c.LocalAddr()), ap(s.LocalAddr())
	socks = append(socks,
		bpfvm.Socket{Protocol: 6, Local: ap(c.LocalAddr()), Remote: ap(c.RemoteAddr())},
		bpfvm.Socket{Protocol: 6, Local: ap(s.LocalAddr()), Remote: ap(s.RemoteAddr())})
	// A connection its client closes first: that end stays in
	// TIME_WAIT.
	c2, err := net.Dial("tcp4", l4.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := l4.Accept()
	if err != nil {
		t.Fatal(err)
	}
	addrs["tw"], addrs["twpeer"] = ap(c2.LocalAddr()), ap(c2.RemoteAddr())
	c2.Close()
	time.Sleep(20 * time.Millisecond)
	s2.Close()
	time.Sleep(20 * time.Millisecond)
	socks = append(socks, bpfvm.Socket{Protocol: 6, Local: addrs["tw"], Remote: addrs["twpeer"], State: 6})
	listen("l6", "tcp6", "[::1]:0")
	socks = append(socks, bpfvm.Socket{Protocol: 6, Local: addrs["l6"], V6Only: true})
	listen("dual", "tcp", ":0")
	socks = append(socks, bpfvm.Socket{Protocol: 6, Local: addrs["dual"]})
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	addrs["udp"] = ap(u.LocalAddr())
	socks = append(socks, bpfvm.Socket{Protocol: 17, Local: addrs["udp"]})
	uc, err := net.DialUDP("udp4", nil, u.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	addrs["udpc"] = ap(uc.LocalAddr())
	socks = append(socks, bpfvm.Socket{Protocol: 17, Local: addrs["udpc"], Remote: ap(uc.RemoteAddr())})
	return socks, addrs
}

// addrPort returns a TCP or UDP address's address and port, the zero
// AddrPort for another.
func addrPort(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort()
	case *net.UDPAddr:
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// connect opens a TCP connection to l: its client and server ends, closed
// at the test's end.
func connect(t *testing.T, l net.Listener) (client, server net.Conn) {
	t.Helper()
	c, err := net.Dial(l.Addr().Network(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}

// TestSockLookupKernel compares the socket lookups, and what bpf_sock,
// bpf_tcp_sock, bpf_get_listener_sock and bpf_sk_fullsock show of what
// they find, with the kernel's test run on this machine's own sockets,
// which bpfvm's world is given: found or not, and every field.
func TestSockLookupKernel(t *testing.T) {
	socks, a := hostSockets(t)
	lo4, lo6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")
	far4 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.9"), 40000)
	far6 := netip.AddrPortFrom(lo6, 40000)
	cur := ^uint64(0)
	closed := netip.AddrPortFrom(lo4, a["l4"].Port()+1)
	cases := []struct {
		name string
		req  sockReq
	}{
		{"listener", sockReq{0, 12, cur, 0, far4, a["l4"]}},
		{"listener skc", sockReq{2, 12, cur, 0, far4, a["l4"]}},
		{"established server end", sockReq{0, 12, cur, 0, a["client"], a["server"]}},
		{"established client end", sockReq{0, 12, cur, 0, a["server"], a["client"]}},
		{"established skc", sockReq{2, 12, cur, 0, a["client"], a["server"]}},
		{"time wait", sockReq{0, 12, cur, 0, a["twpeer"], a["tw"]}},
		{"time wait skc", sockReq{2, 12, cur, 0, a["twpeer"], a["tw"]}},
		{"nothing there", sockReq{0, 12, cur, 0, far4, closed}},
		{"wrong address", sockReq{0, 12, cur, 0, far4, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), a["l4"].Port())}},
		{"udp for a tcp listener", sockReq{1, 12, cur, 0, far4, a["l4"]}},
		{"ipv6 listener", sockReq{0, 36, cur, 0, far6, a["l6"]}},
		{"ipv6 listener v4 lookup", sockReq{0, 12, cur, 0, far4, netip.AddrPortFrom(lo4, a["l6"].Port())}},
		{"dual stack v4", sockReq{0, 12, cur, 0, far4, netip.AddrPortFrom(lo4, a["dual"].Port())}},
		{"dual stack v6", sockReq{0, 36, cur, 0, far6, netip.AddrPortFrom(lo6, a["dual"].Port())}},
		{"udp", sockReq{1, 12, cur, 0, far4, a["udp"]}},
		{"udp from its peer", sockReq{1, 12, cur, 0, a["udpc"], a["udp"]}},
		{"udp connected", sockReq{1, 12, cur, 0, a["udp"], a["udpc"]}},
		{"udp connected from elsewhere", sockReq{1, 12, cur, 0, far4, a["udpc"]}},
		{"tcp for udp", sockReq{0, 12, cur, 0, far4, a["udp"]}},
		{"flags", sockReq{0, 12, cur, 1, far4, a["l4"]}},
		{"netns id 0", sockReq{0, 12, 0, 0, far4, a["l4"]}},
		{"netns id past s32", sockReq{0, 12, 1 << 32, 0, far4, a["l4"]}},
		{"netns u32 -1", sockReq{0, 12, 0xffffffff, 0, far4, a["l4"]}},
		{"netns s32 -1 with high bits", sockReq{0, 12, 0x1_ffffffff, 0, far4, a["l4"]}},
		{"size 20", sockReq{0, 20, cur, 0, far4, a["l4"]}},
		{"size 0", sockReq{0, 0, cur, 0, far4, a["l4"]}},
		{"ipv4 tuple as ipv6", sockReq{0, 36, cur, 0, far4, a["l4"]}},
	}
	world := &bpfvm.Net{Sockets: socks}
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_sock.o", bpfvm.CollectionOptions{})
		compared, agreed := 0, 0
		for _, env := range []string{"tc", "xdp"} {
			for _, c := range cases {
				prog := env + "_lookup"
				if c.req.helper == 2 {
					prog = env + "_skc_lookup"
				}
				pkt := c.req.packet()
				res, err := vm.Programs[prog].Execute(&bpfvm.RunOptions{Data: pkt, Net: world})
				if err != nil {
					t.Fatalf("%s %s: %v", prog, c.name, err)
				}
				got := mapValue(t, vm.Maps["out"])
				if kern == nil {
					continue
				}
				kret, err := kern.Programs[prog].Run(&ebpf.RunOptions{Data: pkt})
				if err != nil {
					t.Fatalf("%s %s: kernel: %v", prog, c.name, err)
				}
				var want []byte
				if err := kern.Maps["out"].Lookup(uint32(0), &want); err != nil {
					t.Fatal(err)
				}
				compared++
				hostDependent(want)
				hostDependent(got)
				if testing.Verbose() {
					t.Logf("%s %s: %d%s", prog, c.name, kret, sockOut(want))
				}
				if uint32(res.R0) != kret || !bytes.Equal(got, want) {
					t.Errorf("%s %s: bpfvm %d %s, kernel %d %s", prog, c.name, res.R0, sockOut(got), kret, sockOut(want))
					continue
				}
				agreed++
			}
		}
		if kern != nil {
			t.Logf("%d lookups compared with the kernel's, %d agree", compared, agreed)
		}
	})
}

// TestSkAssignKernel compares tc's bpf_sk_assign with the kernel's test
// run, whose packet is not at tc ingress: -EOPNOTSUPP, -EINVAL for flags.
func TestSkAssignKernel(t *testing.T) {
	socks, a := hostSockets(t)
	far4 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.9"), 40000)
	world := &bpfvm.Net{Sockets: socks}
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_sock.o", bpfvm.CollectionOptions{})
		for _, c := range []struct {
			name string
			req  sockReq
			want int32
		}{
			{"listener", sockReq{0, 12, ^uint64(0), 0, far4, a["l4"]}, -95},
			{"established", sockReq{0, 12, ^uint64(0), 0, a["client"], a["server"]}, -95},
			{"udp", sockReq{1, 12, ^uint64(0), 0, far4, a["udp"]}, -95},
			{"flags", sockReq{0, 12, ^uint64(0), 1, far4, a["l4"]}, -22},
			{"nothing found", sockReq{0, 12, ^uint64(0), 0, far4, netip.AddrPortFrom(far4.Addr(), 1)}, 1000},
		} {
			pkt := c.req.packet()
			res, err := vm.Programs["tc_sk_assign"].Execute(&bpfvm.RunOptions{Data: pkt, Net: world})
			if err != nil {
				t.Fatal(err)
			}
			if int32(res.R0) != c.want {
				t.Errorf("%s: %d, want %d", c.name, int32(res.R0), c.want)
			}
			if k, ok := kernelRun(t, kern, "tc_sk_assign", pkt, nil); ok && int32(k.ret) != int32(res.R0) {
				t.Errorf("%s: kernel %d, bpfvm %d", c.name, int32(k.ret), int32(res.R0))
			}
		}
	})
}

// mapValue returns key 0's value of a bpfvm map.
func mapValue(t *testing.T, m *bpfvm.Map) []byte {
	t.Helper()
	var v []byte
	if err := m.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// hostDependent zeroes the fields of struct out that the host decides and
// a socket table does not describe:
//   - the IPv6 addresses the kernel reports for an IPv4 socket in
//     TCP_TIME_WAIT: its inet_timewait_sock never sets them, so the kernel
//     reads whatever its slab held before (bpfvm reads zero);
//   - an established socket's rx_queue_mapping, which the kernel records
//     from a packet the socket got when the device recorded a queue for
//     it: loopback does on some hosts and not on others, even on one
//     kernel version (listeners keep NO_QUEUE_MAPPING and are compared).
func hostDependent(b []byte) {
	const family, state, src6, dst6, rxq = 2 * 4, 19 * 4, 8 * 4, 15 * 4, 20 * 4
	if len(b) < rxq+4 {
		return
	}
	st := binary.NativeEndian.Uint32(b[state:])
	if st == 1 {
		clear(b[rxq : rxq+4])
	}
	if binary.NativeEndian.Uint32(b[family:]) != 2 || st != 6 {
		return
	}
	clear(b[src6 : src6+16])
	clear(b[dst6 : dst6+16])
}

// sockOut shows struct out's fields.
func sockOut(b []byte) string {
	var s bytes.Buffer
	names := []string{"found", "bound_dev_if", "family", "type", "protocol", "mark", "priority", "src_ip4", "src_ip6", "", "", "", "src_port", "dst_port", "dst_ip4", "dst_ip6", "", "", "", "state", "rxq", "tcp", "listener", "lport", "full"}
	for i := 0; i+4 <= len(b) && i/4 < len(names); i += 4 {
		if names[i/4] != "" {
			s.WriteString(" " + names[i/4] + "=")
		} else {
			s.WriteString(":")
		}
		v := binary.NativeEndian.Uint32(b[i:])
		if v > 0xffff {
			s.WriteString(net.IP(b[i : i+4]).String())
		} else {
			s.WriteString(itoa(v))
		}
	}
	return s.String()
}

func itoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// TestNetValidate covers the world's validation: inconsistent worlds are
// refused before the run with ErrInvalidNet.
func TestNetValidate(t *testing.T) {
	good := bpfvm.Device{Ifindex: 2, MTU: 1500}
	pfx := netip.MustParsePrefix("10.0.0.0/8")
	sock := bpfvm.Socket{Protocol: 6, Local: netip.MustParseAddrPort("127.0.0.1:80")}
	for _, c := range []struct {
		name string
		net  bpfvm.Net
		err  string
	}{
		{"empty", bpfvm.Net{}, ""},
		{"a world", bpfvm.Net{Devices: []bpfvm.Device{good}, Routes: []bpfvm.Route{{Dst: pfx, Ifindex: 2}}, Sockets: []bpfvm.Socket{sock}}, ""},
		{"duplicate ifindex", bpfvm.Net{Devices: []bpfvm.Device{good, good}}, "ifindex 2 given twice"},
		{"ifindex 0", bpfvm.Net{Devices: []bpfvm.Device{{MTU: 1500}}}, "ifindex 0"},
		{"route to no device", bpfvm.Net{Routes: []bpfvm.Route{{Dst: pfx, Ifindex: 7}}}, "route 10.0.0.0/8: no device 7"},
		{"route on loopback", bpfvm.Net{Routes: []bpfvm.Route{{Dst: pfx, Ifindex: 1}}}, ""},
		{"blackhole needs no device", bpfvm.Net{Routes: []bpfvm.Route{{Dst: pfx, Type: bpfvm.RouteBlackhole}}}, ""},
		{"invalid prefix", bpfvm.Net{Routes: []bpfvm.Route{{Ifindex: 1}}}, "invalid destination"},
		{"ipv4 gateway of ipv6 route", bpfvm.Net{Routes: []bpfvm.Route{{Dst: netip.MustParsePrefix("fd00::/8"), Ifindex: 1, Gateway: netip.MustParseAddr("10.0.0.1")}}}, "IPv4 gateway"},
		{"neighbour on no device", bpfvm.Net{Neighbors: []bpfvm.Neighbor{{Ifindex: 3, Addr: netip.MustParseAddr("10.0.0.1")}}}, "no device 3"},
		{"socket protocol", bpfvm.Net{Sockets: []bpfvm.Socket{{Protocol: 1, Local: sock.Local}}}, "neither TCP nor UDP"},
		{"socket without address", bpfvm.Net{Sockets: []bpfvm.Socket{{Protocol: 6}}}, "no local address"},
		{"socket families", bpfvm.Net{Sockets: []bpfvm.Socket{{Protocol: 6, Local: sock.Local, Remote: netip.MustParseAddrPort("[::1]:9")}}}, "different families"},
		{"socket namespace", bpfvm.Net{Sockets: []bpfvm.Socket{{Protocol: 6, Local: sock.Local, Netns: 77}}}, "namespace 77"},
		{"socket in a peer", bpfvm.Net{Peers: []bpfvm.Peer{{ID: 0, Netns: 77}}, Sockets: []bpfvm.Socket{{Protocol: 6, Local: sock.Local, Netns: 77}}}, ""},
		{"duplicate cookie", bpfvm.Net{Sockets: []bpfvm.Socket{{Protocol: 6, Local: sock.Local, Cookie: 5}, {Protocol: 17, Local: sock.Local, Cookie: 5}}}, "cookie 5 given twice"},
		{"duplicate nsid", bpfvm.Net{Peers: []bpfvm.Peer{{ID: 1, Netns: 7}, {ID: 1, Netns: 8}}}, "namespace id 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.net.Validate()
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && err == nil:
				t.Fatalf("accepted, want %q", c.err)
			case err != nil && !errors.Is(err, bpfvm.ErrInvalidNet):
				t.Fatalf("%v does not wrap ErrInvalidNet", err)
			case err != nil && !bytes.Contains([]byte(err.Error()), []byte(c.err)):
				t.Fatalf("error %q, want %q", err, c.err)
			}
		})
	}
}

// TestNetnsCookieKernel compares bpf_get_netns_cookie of the context and
// of NULL with the kernel's test run (whose namespace is the initial one
// here, what a world without Netns gives).
func TestNetnsCookieKernel(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_sock.o", bpfvm.CollectionOptions{})
		pkt := make([]byte, 64)
		res, err := vm.Programs["tc_netns_cookie"].Execute(&bpfvm.RunOptions{Data: pkt})
		if err != nil {
			t.Fatal(err)
		}
		got := mapValue(t, vm.Maps["out"])
		if ctx, null := binary.NativeEndian.Uint64(got[32:]), binary.NativeEndian.Uint64(got[60:]); res.R0 != 1 || ctx != 3 || null != 3 {
			t.Errorf("cookies %d (ctx) and %d (NULL), want 3 and 3", ctx, null)
		}
		if kern == nil {
			return
		}
		kret, err := kern.Programs["tc_netns_cookie"].Run(&ebpf.RunOptions{Data: pkt})
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		if err := kern.Maps["out"].Lookup(uint32(0), &want); err != nil {
			t.Fatal(err)
		}
		if uint32(res.R0) != kret || !bytes.Equal(got, want) {
			t.Errorf("bpfvm %d %x, kernel %d %x", res.R0, got, kret, want)
		}
		// Another namespace's cookie.
		res, err = vm.Programs["tc_netns_cookie"].Execute(&bpfvm.RunOptions{Data: pkt, Net: &bpfvm.Net{Netns: 4096}})
		if err != nil {
			t.Fatal(err)
		}
		got = mapValue(t, vm.Maps["out"])
		if ctx, null := binary.NativeEndian.Uint64(got[32:]), binary.NativeEndian.Uint64(got[60:]); res.R0 != 0 || ctx != 4096 || null != 3 {
			t.Errorf("in namespace 4096: cookies %d (ctx) and %d (NULL), want 4096 and 3", ctx, null)
		}
	})
}

// TestSockLookupWorld covers what the kernel comparison cannot set up on
// this machine: sockets of other namespaces named by id, sockets bound
// to a device, request sockets (a lookup gives their listener,
// bpf_skc_lookup_tcp the request socket, whose listener
// bpf_get_listener_sock finds).
func TestSockLookupWorld(t *testing.T) {
	ap := netip.MustParseAddrPort
	far := ap("10.0.0.9:4000")
	world := &bpfvm.Net{
		Peers:   []bpfvm.Peer{{ID: 5, Netns: 1000}},
		Devices: []bpfvm.Device{{Ifindex: 2, MTU: 1500}},
		Sockets: []bpfvm.Socket{
			{Protocol: 6, Local: ap("10.0.0.1:80"), Netns: 1000},
			{Protocol: 6, Local: ap("10.0.0.1:81"), BoundDevIf: 2},
			{Protocol: 6, Local: ap("10.0.0.1:82")},
			{Protocol: 6, Local: ap("10.0.0.1:82"), Remote: far, State: 12},
			{Protocol: 17, Local: ap("[fd00::1]:53")},
			{Protocol: 17, Local: ap("[::]:53"), Mark: 9},
		},
	}
	cur := ^uint64(0)
	for _, c := range []struct {
		name                string
		req                 sockReq
		found, state, lport uint32
		listener, lportLsnr uint32
		family, mark        uint32
	}{
		{name: "peer namespace by id", req: sockReq{0, 12, 5, 0, far, ap("10.0.0.1:80")}, found: 1, state: 10, lport: 80, listener: 1, lportLsnr: 80, family: 2},
		{name: "not in the run's namespace", req: sockReq{0, 12, cur, 0, far, ap("10.0.0.1:80")}},
		{name: "unknown namespace id", req: sockReq{0, 12, 6, 0, far, ap("10.0.0.1:80")}},
		{name: "bound to another device", req: sockReq{0, 12, cur, 0, far, ap("10.0.0.1:81")}},
		{name: "request socket gives its listener", req: sockReq{0, 12, cur, 0, far, ap("10.0.0.1:82")}, found: 1, state: 10, lport: 82, listener: 1, lportLsnr: 82, family: 2},
		{name: "request socket itself", req: sockReq{2, 12, cur, 0, far, ap("10.0.0.1:82")}, found: 1, state: 12, lport: 82, listener: 1, lportLsnr: 82, family: 2},
		{name: "udp v6 exact before wildcard", req: sockReq{1, 36, cur, 0, ap("[fd00::9]:4000"), ap("[fd00::1]:53")}, found: 1, state: 7, lport: 53, family: 10},
		{name: "udp v6 wildcard", req: sockReq{1, 36, cur, 0, ap("[fd00::9]:4000"), ap("[fd00::2]:53")}, found: 1, state: 7, lport: 53, family: 10, mark: 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			modes(t, func(t *testing.T, noVerify bool) {
				vm := loadVM(t, noVerify, "testdata/helpers_sock.o", bpfvm.CollectionOptions{})
				prog := "tc_lookup"
				if c.req.helper == 2 {
					prog = "tc_skc_lookup"
				}
				res, err := vm.Programs[prog].Execute(&bpfvm.RunOptions{Data: c.req.packet(), Net: world})
				if err != nil {
					t.Fatal(err)
				}
				o := mapValue(t, vm.Maps["out"])
				u := func(i int) uint32 { return binary.NativeEndian.Uint32(o[4*i:]) }
				if uint32(res.R0) != c.found || u(0) != c.found || u(19) != c.state || u(12) != c.lport || u(22) != c.listener || u(23) != c.lportLsnr || u(2) != c.family || u(5) != c.mark {
					t.Errorf("got %d%s", res.R0, sockOut(o))
				}
			})
		})
	}
}
