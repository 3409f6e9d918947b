package bpfvm_test

import (
	"bytes"
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
)

// sockmapSocket is a socket of this machine for a socket map: its
// descriptor's connection, its cookie (SO_COOKIE) and its description in
// bpfvm's world, which carries that cookie.
type sockmapSocket struct {
	conn  syscall.Conn
	world bpfvm.Socket
}

// withFD calls f with the socket's descriptor.
func (s sockmapSocket) withFD(t *testing.T, f func(fd int)) {
	t.Helper()
	rc, err := s.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(func(fd uintptr) { f(int(fd)) }); err != nil {
		t.Fatal(err)
	}
}

// sockmapSockets opens a TCP listener on 127.0.0.1, a connection to it
// (both ends), a TCP listener on ::1 and a bound UDP socket, each with its
// cookie.
func sockmapSockets(t *testing.T) map[string]sockmapSocket {
	t.Helper()
	socks := map[string]sockmapSocket{}
	add := func(name string, c syscall.Conn, proto uint8, local, remote net.Addr) {
		s := sockmapSocket{conn: c, world: bpfvm.Socket{Protocol: proto, Local: addrPort(local)}}
		if remote != nil {
			s.world.Remote = addrPort(remote)
		}
		s.withFD(t, func(fd int) {
			cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
			if err != nil {
				t.Skipf("SO_COOKIE: %v", err)
			}
			s.world.Cookie = cookie
		})
		socks[name] = s
	}
	listen := func(network, addr string) *net.TCPListener {
		// Plain TCP: Go listens with MPTCP where it can, a protocol
		// no socket map takes.
		var lc net.ListenConfig
		lc.SetMultipathTCP(false)
		l, err := lc.Listen(context.Background(), network, addr)
		if err != nil {
			t.Skipf("listen %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { l.Close() })
		return l.(*net.TCPListener)
	}
	l4 := listen("tcp4", "127.0.0.1:0")
	add("l4", l4, 6, l4.Addr(), nil)
	c, s := connect(t, l4)
	add("client", c.(*net.TCPConn), 6, c.LocalAddr(), c.RemoteAddr())
	add("server", s.(*net.TCPConn), 6, s.LocalAddr(), s.RemoteAddr())
	l6 := listen("tcp6", "[::1]:0")
	add("l6", l6, 6, l6.Addr(), nil)
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	add("udp", u, 17, u.LocalAddr(), nil)
	l6s := socks["l6"]
	l6s.world.V6Only = true // as Go's tcp6 listeners
	socks["l6"] = l6s
	return socks
}

// TestSockmapLookupKernel compares a tc program's lookups in a sockmap and
// a sockhash (bpf_map_lookup_elem's referenced socket, what bpf_sock and
// the socket helpers show of it, bpf_sk_release) with the kernel's test
// run: the kernel's maps hold this machine's sockets, bpfvm's their
// cookies, and bpfvm's world the same sockets. Both engines, verified and
// checked.
func TestSockmapLookupKernel(t *testing.T) {
	socks := sockmapSockets(t)
	inMap := map[uint32]string{0: "l4", 1: "client", 2: "udp"}
	inHash := map[uint32]string{0: "server", 1: "l6"}
	var world bpfvm.Net
	for _, name := range []string{"l4", "client", "server", "l6", "udp"} {
		world.Sockets = append(world.Sockets, socks[name].world)
	}
	kern := kernelCollection(t, "testdata/helpers_sock.o")
	if kern != nil {
		for _, m := range []struct {
			name string
			keys map[uint32]string
		}{{"sockets", inMap}, {"socketsh", inHash}} {
			for k, name := range m.keys {
				socks[name].withFD(t, func(fd int) {
					if err := kern.Maps[m.name].Put(k, uint64(fd)); err != nil {
						t.Fatalf("kernel %s[%d] = %s: %v", m.name, k, name, err)
					}
				})
			}
		}
	}
	cases := []struct {
		name      string
		hash, key uint32
	}{
		{"sockmap listener", 0, 0}, {"sockmap client end", 0, 1}, {"sockmap udp", 0, 2},
		{"sockmap empty slot", 0, 3}, {"sockmap out of range", 0, 9},
		{"sockhash server end", 1, 0}, {"sockhash ipv6 listener", 1, 1}, {"sockhash no key", 1, 2},
	}
	// The kernel's results, once: its maps and sockets do not change.
	type result struct {
		ret uint32
		out []byte
	}
	want := make([]*result, len(cases))
	if kern != nil {
		for i, c := range cases {
			pkt := sockReq{helper: c.hash, size: c.key}.packet()
			ret, err := kern.Programs["tc_sockmap_lookup"].Run(&ebpf.RunOptions{Data: pkt})
			if err != nil {
				t.Fatalf("%s: kernel: %v", c.name, err)
			}
			var out []byte
			if err := kern.Maps["out"].Lookup(uint32(0), &out); err != nil {
				t.Fatal(err)
			}
			want[i] = &result{ret, out}
		}
	}
	compared, agreed := 0, 0
	for name, e := range map[string]bpfvm.Engine{"interp": bpfvm.EngineInterpreter, "jit": bpfvm.EngineJIT} {
		t.Run(name, func(t *testing.T) {
			modes(t, func(t *testing.T, noVerify bool) {
				vm := loadVM(t, noVerify, "testdata/helpers_sock.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}})
				for k, name := range inMap {
					if err := vm.Maps["sockets"].Put(k, socks[name].world.Cookie); err != nil {
						t.Fatal(err)
					}
				}
				for k, name := range inHash {
					if err := vm.Maps["socketsh"].Put(k, socks[name].world.Cookie); err != nil {
						t.Fatal(err)
					}
				}
				p := vm.Programs["tc_sockmap_lookup"]
				for i, c := range cases {
					pkt := sockReq{helper: c.hash, size: c.key}.packet()
					res, err := p.Execute(&bpfvm.RunOptions{Data: pkt, Net: &world})
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					got := mapValue(t, vm.Maps["out"])
					keys := inMap
					if c.hash == 1 {
						keys = inHash
					}
					if found := keys[c.key] != ""; res.R0 != 0 != found {
						t.Errorf("%s: returned %d, want found %v", c.name, res.R0, found)
					}
					if want[i] == nil {
						continue
					}
					compared++
					hostDependent(got)
					hostDependent(want[i].out)
					if uint32(res.R0) != want[i].ret || !bytes.Equal(got, want[i].out) {
						t.Errorf("%s: bpfvm %d %s, kernel %d %s", c.name, res.R0, sockOut(got), want[i].ret, sockOut(want[i].out))
						continue
					}
					agreed++
				}
				// A socket the world lacks is NULL, as one that closed.
				lacking := bpfvm.Net{Sockets: world.Sockets[2:]}
				res, err := p.Execute(&bpfvm.RunOptions{Data: sockReq{size: 0}.packet(), Net: &lacking})
				if err != nil {
					t.Fatal(err)
				}
				if res.R0 != 0 {
					t.Errorf("sockmap listener the world lacks: returned %d, want 0 (NULL)", res.R0)
				}
			})
		})
	}
	if kern != nil {
		t.Logf("%d sockmap and sockhash lookups compared with the kernel's, %d agree", compared, agreed)
	}
}
