package runner

import (
	"net/netip"
	"testing"
)

// TestSocketSlots covers the socket table's slots: a socket's address maps
// back to its entry (bpf_sock and bpf_tcp_sock), cookies find sockets.
func TestSocketSlots(t *testing.T) {
	net := &Net{Sockets: []Socket{
		{Protocol: ProtoTCP, Local: netip.MustParseAddrPort("10.0.0.1:80"), Cookie: 7},
		{Protocol: ProtoUDP, Local: netip.MustParseAddrPort("[::]:53")},
	}}
	var r Runner
	if err := r.beginNet(net); err != nil {
		t.Fatal(err)
	}
	defer r.freeNet()
	a := r.SocketByCookie(7)
	if a == 0 || r.SocketByCookie(8) != 0 || r.SocketByCookie(0) != 0 {
		t.Fatalf("SocketByCookie: %#x", a)
	}
	ref, ok := r.Sock(a)
	if !ok || ref.Socket != &net.Sockets[0] || ref.TCP {
		t.Fatalf("Sock(%#x) = %+v, %v", a, ref, ok)
	}
	if st, proto := SockState(ref); st != TCPListen || proto != ProtoTCP {
		t.Errorf("state %d, protocol %d", st, proto)
	}
	if ref, ok := r.Sock(ref.TCPSockAddr()); !ok || !ref.TCP || ref.Addr != a {
		t.Errorf("the tcp_sock resolves to %+v, %v", ref, ok)
	}
	if _, ok := r.Sock(a + 4); ok {
		t.Error("an address inside a slot resolved")
	}
	b := r.sockAddr(1)
	ref, _ = r.Sock(b)
	if st, proto := SockState(ref); st != TCPClose || proto != ProtoUDP {
		t.Errorf("udp: state %d, protocol %d", st, proto)
	}
	if c := r.SockCookie(ref); c != 1<<62|2 {
		t.Errorf("generated cookie %#x", c)
	}
}
