package bpfvm_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
)

// The sk_reuseport comparison: the kernel has no test run for the type,
// so the kernel's side steers real datagrams and connections through a
// reuseport group the program is attached to (SO_ATTACH_REUSEPORT_EBPF),
// and bpfvm's runs the program on the same packet with a world of the
// same sockets (their SO_COOKIEs in both reuseport arrays): the
// helper's result, the context's fields, the verdict and the socket the
// packet went to agree.

// reuseSock is a socket of the comparison, as the kernel has it and as
// bpfvm's world describes it.
type reuseSock struct {
	fd   int
	sock bpfvm.Socket
}

// openReuse opens a socket (UDP or a TCP listener) with SO_REUSEPORT
// bound to addr (port 0: a free one), and describes it.
func openReuse(t *testing.T, proto uint8, addr netip.AddrPort) reuseSock {
	t.Helper()
	family, typ := unix.AF_INET, unix.SOCK_DGRAM
	if addr.Addr().Is6() {
		family = unix.AF_INET6
	}
	if proto == unix.IPPROTO_TCP {
		typ = unix.SOCK_STREAM
	}
	fd, err := unix.Socket(family, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		t.Fatal(err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Bind(fd, sockaddr(addr)); err != nil {
		t.Fatal(err)
	}
	if proto == unix.IPPROTO_TCP {
		if err := unix.Listen(fd, 16); err != nil {
			t.Fatal(err)
		}
	}
	cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		t.Fatal(err)
	}
	return reuseSock{fd: fd, sock: bpfvm.Socket{Cookie: cookie, Protocol: proto, Local: localAddr(t, fd), Reuseport: true, V6Only: family == unix.AF_INET6}}
}

func sockaddr(a netip.AddrPort) unix.Sockaddr {
	if a.Addr().Is4() {
		return &unix.SockaddrInet4{Addr: a.Addr().As4(), Port: int(a.Port())}
	}
	return &unix.SockaddrInet6{Addr: a.Addr().As16(), Port: int(a.Port())}
}

func localAddr(t *testing.T, fd int) netip.AddrPort {
	t.Helper()
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	t.Fatalf("socket address %T", sa)
	return netip.AddrPort{}
}

// reuseGroup is a comparison's sockets: the group's four (indexes 0-3 of
// the arrays), a socket of another port (4), of the other protocol (5)
// and of the other family (6); slot 7 is empty.
func reuseGroup(t *testing.T, proto uint8, v6, any bool) []reuseSock {
	lo, other := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")
	if any {
		lo, other = netip.IPv4Unspecified(), netip.IPv6Unspecified()
	}
	if v6 {
		lo, other = other, lo
	}
	first := openReuse(t, proto, netip.AddrPortFrom(lo, 0))
	port := first.sock.Local.Port()
	g := []reuseSock{first}
	for range 3 {
		g = append(g, openReuse(t, proto, netip.AddrPortFrom(lo, port)))
	}
	otherProto := uint8(unix.IPPROTO_UDP)
	if proto == unix.IPPROTO_UDP {
		otherProto = unix.IPPROTO_TCP
	}
	return append(g,
		openReuse(t, proto, netip.AddrPortFrom(lo, 0)),
		openReuse(t, otherProto, netip.AddrPortFrom(lo, port)),
		openReuse(t, proto, netip.AddrPortFrom(other, port)))
}

// reuseOut is the outcome of a packet: what the program reported, its
// verdict and the index of the group's socket the packet went to (-1:
// dropped; -2: one the kernel's hash chose, when the program selected
// none).
type reuseOut struct {
	seen [6]uint64
	to   int
}

func TestReuseportKernel(t *testing.T) {
	kern := kernelCollection(t, "testdata/reuseport.o")
	if kern == nil {
		t.Skip("no kernel oracle")
	}
	total, agree := 0, 0
	for _, tc := range []struct {
		name    string
		proto   uint8
		v6, any bool
	}{
		{"udp4", unix.IPPROTO_UDP, false, false},
		{"udp6", unix.IPPROTO_UDP, true, false},
		{"tcp4", unix.IPPROTO_TCP, false, false},
		{"tcp6", unix.IPPROTO_TCP, true, false},
		{"udp4 any", unix.IPPROTO_UDP, false, true},
		{"udp6 any", unix.IPPROTO_UDP, true, true},
		{"tcp4 any", unix.IPPROTO_TCP, false, true},
		{"tcp6 any", unix.IPPROTO_TCP, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, a := compareReuseport(t, kern, tc.proto, tc.v6, tc.any)
			total, agree = total+n, agree+a
		})
	}
	t.Logf("%d/%d packets agree with the kernel", agree, total)
}

// compareReuseport steers the packets of one group through the kernel
// and bpfvm, in both modes, and returns how many were compared and how
// many agreed.
func compareReuseport(t *testing.T, kern *ebpf.Collection, proto uint8, v6, any bool) (int, int) {
	prog := "select_udp"
	if proto == unix.IPPROTO_TCP {
		prog = "select_tcp"
	}
	g := reuseGroup(t, proto, v6, any)
	// A fresh array per group: a socket is in one reuseport array slot
	// at a time, so the kernel's is emptied first.
	km, seen := kern.Maps["socks"], kern.Maps["seen"]
	for i := range uint32(8) {
		km.Delete(i)
	}
	for i, s := range g {
		if err := km.Update(uint32(i), uint64(s.fd), ebpf.UpdateAny); err != nil {
			t.Fatalf("kernel: socket %d: %v", i, err)
		}
	}
	if err := unix.SetsockoptInt(g[0].fd, unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_EBPF, kern.Programs[prog].FD()); err != nil {
		t.Fatal(err)
	}
	world := &bpfvm.Net{Socket: &g[0].sock}
	for _, s := range g {
		world.Sockets = append(world.Sockets, s.sock)
	}
	type packet struct {
		name string
		data []byte // from the transport header
		key  int
	}
	var packets []packet
	var want []reuseOut
	for key := range 10 {
		for _, action := range []byte{0, 1} {
			for _, size := range []int{2, 16, 200} {
				if proto == unix.IPPROTO_TCP && (action == 1 || size != 2) {
					continue
				}
				name := fmt.Sprintf("key %d action %d size %d", key, action, size)
				for k := range uint32(6) {
					seen.Put(k, uint64(0))
				}
				var data []byte
				var to int
				if proto == unix.IPPROTO_UDP {
					payload := make([]byte, size)
					payload[0], payload[1] = byte(key), action
					data, to = sendUDP(t, g, payload)
				} else {
					data, to = connectTCP(t, g, key)
				}
				var out reuseOut
				for k := range uint32(6) {
					seen.Lookup(k, &out.seen[k])
				}
				out.to = to
				if out.seen[0] != 0 && to >= 0 {
					out.to = -2 // the kernel's hash chose
				}
				packets, want = append(packets, packet{name, data, key}), append(want, out)
			}
		}
	}
	n, agreed := 0, 0
	modes(t, func(t *testing.T, noVerify bool) {
		c := loadVM(t, noVerify, "testdata/reuseport.o", bpfvm.CollectionOptions{})
		vm, vseen := c.Maps["socks"], c.Maps["seen"]
		for i, s := range g {
			if err := vm.Update(uint32(i), s.sock.Cookie, bpfvm.UpdateAny); err != nil {
				t.Fatalf("bpfvm: socket %d: %v", i, err)
			}
		}
		defer func() {
			for i := range uint32(8) {
				vm.Delete(i)
			}
		}()
		ethProto := uint16(0x0800)
		if v6 {
			ethProto = 0x86dd
		}
		ctx := make([]byte, 56)
		binary.NativeEndian.PutUint16(ctx[20:], ethProto<<8|ethProto>>8)
		ctx[24] = proto
		if any {
			ctx[28] = 1 // bind_inany
		}
		for i, p := range packets {
			for k := range uint32(6) {
				vseen.Update(k, uint64(0), bpfvm.UpdateAny)
			}
			res, err := c.Programs[prog].Execute(&bpfvm.RunOptions{Data: p.data, Context: ctx, Net: world})
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			var got reuseOut
			for k := range uint32(6) {
				vseen.Lookup(k, &got.seen[k])
			}
			switch {
			case res.R0 == 0:
				got.to = -1
			case res.Redirect.Valid:
				got.to = int(res.Redirect.Key)
				if res.Redirect.Socket != g[got.to].sock.Cookie {
					t.Errorf("%s: selected cookie %#x, slot %d holds %#x", p.name, res.Redirect.Socket, got.to, g[got.to].sock.Cookie)
				}
			default:
				got.to = -2
			}
			n++
			if got != want[i] {
				t.Errorf("%s:\n bpfvm  %x to %d\n kernel %x to %d", p.name, got.seen, got.to, want[i].seen, want[i].to)
				continue
			}
			agreed++
		}
	})
	unix.SetsockoptInt(g[0].fd, unix.SOL_SOCKET, unix.SO_DETACH_REUSEPORT_BPF, 0)
	return n, agreed
}

// sendUDP sends payload to the group and returns the datagram as the
// program sees it (from its UDP header) and the index of the group's
// socket that received it (-1: none; -2 one the program did not select).
func sendUDP(t *testing.T, g []reuseSock, payload []byte) ([]byte, int) {
	t.Helper()
	dst := g[0].sock.Local
	family := unix.AF_INET
	if dst.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, payload, 0, sockaddr(dst)); err != nil {
		t.Fatal(err)
	}
	src := localAddr(t, fd)
	hdr := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(hdr, src.Port())
	binary.BigEndian.PutUint16(hdr[2:], dst.Port())
	binary.BigEndian.PutUint16(hdr[4:], uint16(8+len(payload)))
	to := received(t, g, payload[1]&1 == 1, func(fd int) bool {
		buf := make([]byte, 512)
		n, _, err := unix.Recvfrom(fd, buf, 0)
		return err == nil && n == len(payload)
	})
	return append(hdr, payload...), to
}

// connectTCP connects to the group from a source port whose low byte is
// key (mod 10), and returns the SYN's TCP header as the program sees it
// (40 bytes: the loopback's options) and the index of the listener that
// took the connection.
func connectTCP(t *testing.T, g []reuseSock, key int) ([]byte, int) {
	t.Helper()
	dst := g[0].sock.Local
	family := unix.AF_INET
	if dst.Addr().Is6() {
		family = unix.AF_INET6
	}
	var fd int
	var src netip.AddrPort
	// 41000's low byte is 40: key more is key mod 10.
	for base := 41000; ; base += 256 {
		var err error
		if fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
			t.Fatal(err)
		}
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		src = netip.AddrPortFrom(dst.Addr(), uint16(base+key))
		if err := unix.Bind(fd, sockaddr(src)); err == nil {
			break
		}
		unix.Close(fd)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, sockaddr(dst)); err != nil {
		t.Fatal(err)
	}
	syn := make([]byte, 40)
	binary.BigEndian.PutUint16(syn, src.Port())
	binary.BigEndian.PutUint16(syn[2:], dst.Port())
	syn[12], syn[13] = 10<<4, 0x02
	to := received(t, g, false, func(fd int) bool {
		nfd, _, err := unix.Accept(fd)
		if err == nil {
			unix.Close(nfd)
		}
		return err == nil
	})
	return syn, to
}

// received waits for the packet at the group's four sockets: the index
// of the one take (a read or accept) succeeds on, -1 when none does
// (quickly, for a packet the program drops).
func received(t *testing.T, g []reuseSock, drop bool, take func(fd int) bool) int {
	t.Helper()
	fds := make([]unix.PollFd, 4)
	for i := range fds {
		fds[i] = unix.PollFd{Fd: int32(g[i].fd), Events: unix.POLLIN}
	}
	timeout := 500
	if drop {
		timeout = 20
	}
	deadline := time.Now().Add(time.Duration(timeout) * time.Millisecond)
	for time.Now().Before(deadline) {
		n, err := unix.Poll(fds, timeout)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		for i := range fds {
			if fds[i].Revents&unix.POLLIN != 0 && take(g[i].fd) {
				return i
			}
		}
	}
	return -1
}
