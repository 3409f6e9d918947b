package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// The host's socket table (Net.Sockets) as programs see it. A run lays
// each socket out in off-heap memory of its runner, read-only to the
// program: a slot per socket, its struct bpf_sock (as progtype.Sock reads
// it: the kernel's narrower fields zero-extended) followed by its struct
// bpf_tcp_sock. The socket lookups return the address of a slot, and the
// helpers that take a socket map the address back to the table's entry.

// sockSlot is the size of a socket's slot: bpf_sock, then bpf_tcp_sock.
const sockSlot = progtype.SockSize + progtype.TCPSockSize

// Protocols, socket types, address families and TCP states, as the kernel
// numbers them.
const (
	ProtoTCP = 6
	ProtoUDP = 17

	sockStream = 1
	sockDgram  = 2

	AFInet  = 2
	AFInet6 = 10

	TCPEstablished = 1
	TCPTimeWait    = 6
	TCPClose       = 7
	TCPListen      = 10
	TCPNewSynRecv  = 12
)

// InitNetns is the cookie of the kernel's initial network namespace: 3
// on Linux 6.18, which numbers namespaces of every kind from one counter
// (earlier kernels gave it 1).
const InitNetns = 3

// ErrInvalidNet is wrapped by the errors of a Net that does not hold
// together.
var ErrInvalidNet = errors.New("invalid host world")

// Validate reports the first inconsistency of the world: a device given
// twice or with ifindex 0, a route, rule or neighbour on a device that is
// not there, a socket of no known protocol or namespace, a namespace id
// given twice. The error wraps ErrInvalidNet.
func (n *Net) Validate() error {
	if err := n.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidNet, err)
	}
	return nil
}

func (n *Net) validate() error {
	devs := map[uint32]bool{}
	for i, d := range n.Devices {
		if d.Ifindex == 0 {
			return fmt.Errorf("device %d: ifindex 0", i)
		}
		if devs[d.Ifindex] {
			return fmt.Errorf("device %d: ifindex %d given twice", i, d.Ifindex)
		}
		devs[d.Ifindex] = true
		for _, a := range d.Addrs {
			if !a.IsValid() {
				return fmt.Errorf("device %d: invalid address", d.Ifindex)
			}
		}
	}
	devs[loopback.Ifindex] = true
	for i, r := range n.Routes {
		if !r.Dst.IsValid() {
			return fmt.Errorf("route %d: invalid destination", i)
		}
		if r.Type > RouteProhibit {
			return fmt.Errorf("route %v: unknown type %d", r.Dst, r.Type)
		}
		if r.Type.dropping() {
			continue
		}
		if !devs[r.Ifindex] {
			return fmt.Errorf("route %v: no device %d", r.Dst, r.Ifindex)
		}
		if r.Gateway.IsValid() && r.Type != RouteUnicast {
			return fmt.Errorf("route %v: a gateway on a route of type %d", r.Dst, r.Type)
		}
		if r.Gateway.IsValid() && r.Dst.Addr().Is6() && !r.Gateway.Is6() {
			return fmt.Errorf("route %v: IPv4 gateway %v of an IPv6 route", r.Dst, r.Gateway)
		}
		if r.Src.IsValid() && r.Src.Is6() != r.Dst.Addr().Is6() {
			return fmt.Errorf("route %v: source %v of the other family", r.Dst, r.Src)
		}
	}
	for i, r := range n.Neighbors {
		if !devs[r.Ifindex] {
			return fmt.Errorf("neighbour %d (%v): no device %d", i, r.Addr, r.Ifindex)
		}
		if !r.Addr.IsValid() {
			return fmt.Errorf("neighbour %d: invalid address", i)
		}
	}
	nets := map[uint64]bool{0: true, n.netns(): true}
	ids := map[int32]bool{}
	for _, p := range n.Peers {
		if p.ID < 0 || ids[p.ID] {
			return fmt.Errorf("namespace id %d: negative or given twice", p.ID)
		}
		if p.Netns == 0 || p.Netns == n.netns() {
			return fmt.Errorf("namespace id %d: cookie %d is the run's own", p.ID, p.Netns)
		}
		ids[p.ID] = true
		nets[p.Netns] = true
	}
	cookies := map[uint64]bool{}
	for i, s := range n.Sockets {
		if s.Protocol != ProtoTCP && s.Protocol != ProtoUDP {
			return fmt.Errorf("socket %d: protocol %d is neither TCP nor UDP", i, s.Protocol)
		}
		if !s.Local.IsValid() {
			return fmt.Errorf("socket %d: no local address", i)
		}
		if s.Remote.IsValid() && s.Remote.Addr().Is6() != s.Local.Addr().Is6() {
			return fmt.Errorf("socket %d: local %v and remote %v of different families", i, s.Local, s.Remote)
		}
		if !nets[s.Netns] {
			return fmt.Errorf("socket %d: namespace %d is neither the run's nor a peer's", i, s.Netns)
		}
		if s.Cookie != 0 {
			if cookies[s.Cookie] {
				return fmt.Errorf("socket %d: cookie %d given twice", i, s.Cookie)
			}
			cookies[s.Cookie] = true
		}
		if s.BoundDevIf != 0 && !devs[s.BoundDevIf] {
			return fmt.Errorf("socket %d: bound to no device %d", i, s.BoundDevIf)
		}
	}
	return nil
}

// netns returns the cookie of the run's namespace.
func (n *Net) netns() uint64 {
	if n.Netns == 0 {
		return InitNetns
	}
	return n.Netns
}

// IngressIfindex returns the device a socket lookup's packet arrived on:
// a socket buffer's (__sk_buff.ifindex) or an XDP packet's
// (xdp_md.ingress_ifindex), the loopback device when the test run's
// context gives none, 0 for programs without a packet.
func (r *Runner) IngressIfindex() uint32 {
	var ifindex uint32
	switch {
	case r.prog.Type.Skb:
		ifindex = binary.LittleEndian.Uint32(r.SkbContext()[SkbIfindex:])
	case r.prog.Type.Name == "xdp":
		ifindex = binary.LittleEndian.Uint32(vm.Slice(r.buf.Addr()+xdpIngressIfindex, 4))
	default:
		return 0
	}
	if ifindex == 0 {
		ifindex = loopback.Ifindex
	}
	return ifindex
}

// xdpIngressIfindex is the offset of xdp_md.ingress_ifindex.
const xdpIngressIfindex = 12

// NetnsCookie returns bpf_get_netns_cookie's value for the run's namespace.
func (r *Runner) NetnsCookie() uint64 { return r.Net().netns() }

// family returns the socket's address family.
func (s *Socket) family() uint32 {
	if s.Local.Addr().Is6() {
		return AFInet6
	}
	return AFInet
}

// state returns the socket's state, its default filled in.
func (s *Socket) state() uint8 {
	switch {
	case s.State != 0:
		return s.State
	case s.Remote.IsValid():
		return TCPEstablished
	case s.Protocol == ProtoTCP:
		return TCPListen
	}
	return TCPClose
}

// fullsock reports whether the socket is a full one (sk_fullsock): not a
// time-wait or request mini socket.
func fullsock(state uint8) bool { return state != TCPTimeWait && state != TCPNewSynRecv }

// loopback4v6 is the IPv4 address the kernel gives an IPv6 socket's IPv4
// fields when its address is not IPv4-mapped (LOOPBACK4_IPV6).
var loopback4v6 = [4]byte{127, 0, 0, 6}

// v4Of returns what the kernel keeps of an address in an IPv4 field: the
// address itself, the IPv4 part of a mapped one, 0 for none or the
// unspecified one, and 127.0.0.6 for another IPv6 address.
func v4Of(a netip.Addr) [4]byte {
	switch {
	case !a.IsValid() || a.IsUnspecified():
		return [4]byte{}
	case a.Is4() || a.Is4In6():
		return a.Unmap().As4()
	}
	return loopback4v6
}

// v6Of returns what the kernel keeps of an address in an IPv6 field of
// socket s: an AF_INET6 socket's address; for an AF_INET one, the
// IPv4-mapped address where the kernel sets the addresses with
// sk_rcv_saddr_set and sk_daddr_set (a connected full TCP socket, either
// end) and zero elsewhere (listeners, UDP, time-wait and request
// sockets).
func v6Of(a netip.Addr, s *Socket) [16]byte {
	switch {
	case !a.IsValid():
		return [16]byte{}
	case s.family() == AFInet6:
		return a.As16()
	case s.Protocol == ProtoTCP && s.Remote.IsValid() && fullsock(s.state()):
		return a.As16() // IPv4-mapped
	}
	return [16]byte{}
}

// putSock writes s as struct bpf_sock and struct bpf_tcp_sock into slot.
func putSock(slot []byte, s *Socket) {
	le := binary.LittleEndian
	clear(slot)
	fam := s.family()
	typ := uint32(sockStream)
	if s.Protocol == ProtoUDP {
		typ = sockDgram
	}
	le.PutUint32(slot[0:], s.BoundDevIf)
	le.PutUint32(slot[4:], fam)
	le.PutUint32(slot[8:], typ)
	le.PutUint32(slot[12:], uint32(s.Protocol))
	le.PutUint32(slot[16:], s.Mark)
	le.PutUint32(slot[20:], s.Priority)
	src4, dst4 := v4Of(s.Local.Addr()), v4Of(s.Remote.Addr())
	src6, dst6 := v6Of(s.Local.Addr(), s), v6Of(s.Remote.Addr(), s)
	copy(slot[24:], src4[:])
	copy(slot[28:], src6[:])
	le.PutUint32(slot[44:], uint32(s.Local.Port()))
	binary.BigEndian.PutUint16(slot[48:], s.Remote.Port())
	copy(slot[52:], dst4[:])
	copy(slot[56:], dst6[:])
	le.PutUint32(slot[72:], uint32(s.state()))
	le.PutUint32(slot[76:], 0xffffffff) // no receive queue recorded
	t, tcp := &s.TCP, slot[progtype.SockSize:]
	for i, v := range []uint32{t.SndCwnd, t.SrttUs, t.RttMin, t.SndSsthresh, t.RcvNxt, t.SndNxt, t.SndUna, t.MssCache,
		t.EcnFlags, t.RateDelivered, t.RateIntervalUs, t.PacketsOut, t.RetransOut, t.TotalRetrans, t.SegsIn,
		t.DataSegsIn, t.SegsOut, t.DataSegsOut, t.LostOut, t.SackedOut} {
		le.PutUint32(tcp[4*i:], v)
	}
	le.PutUint64(tcp[progtype.TCPSockBytesReceived:], t.BytesReceived)
	le.PutUint64(tcp[progtype.TCPSockBytesAcked:], t.BytesAcked)
	for i, v := range []uint32{t.DsackDups, t.Delivered, t.DeliveredCE, t.IcskRetransmits} {
		le.PutUint32(tcp[96+4*i:], v)
	}
}

// netState is the per-run host world of a runner.
type netState struct {
	// socks holds the slots of the world's sockets; nsocks of them are
	// the run's.
	socks  *vm.Mem
	nsocks int
	// selected and noReuseport are an sk_lookup run's bpf_sk_assign
	// (sklookup.go).
	selected    uint64
	noReuseport bool
	// overflowed are the listeners the run made SYN cookies for.
	overflowed []uint64
	// fib is the run's index of the world's routes (fibindex.go).
	fib fibIndex
}

// beginNet sets up the host world of a run: the slots of its sockets.
func (r *Runner) beginNet(net *Net) error {
	r.sk.net = net
	r.ns.fib.built = false // the index is the run's world's (fibindex.go)
	r.ns.nsocks = 0
	r.ns.overflowed = r.ns.overflowed[:0]
	if net == nil || len(net.Sockets) == 0 {
		return nil
	}
	need := len(net.Sockets) * sockSlot
	if r.ns.socks == nil || len(r.ns.socks.Bytes()) < need {
		if r.ns.socks != nil {
			r.ns.socks.Free()
			r.ns.socks = nil
		}
		m, err := vm.Alloc(need)
		if err != nil {
			return err
		}
		r.ns.socks = m
	}
	b := r.ns.socks.Bytes()
	for i := range net.Sockets {
		putSock(b[i*sockSlot:(i+1)*sockSlot], &net.Sockets[i])
	}
	r.ns.nsocks = len(net.Sockets)
	return nil
}

// freeNet frees the runner's socket slots.
func (r *Runner) freeNet() {
	if r.ns.socks != nil {
		r.ns.socks.Free()
		r.ns.socks = nil
	}
}

// socketRegion returns the run's socket slots as a read-only region (the
// zero region for none).
func (r *Runner) socketRegion() vm.Region {
	if r.ns.nsocks == 0 {
		return vm.Region{}
	}
	base := r.ns.socks.Addr()
	return vm.Region{Start: base, End: base + uint64(r.ns.nsocks*sockSlot)}
}

// SockRef is a socket pointer a program passed a helper, resolved.
type SockRef struct {
	// Socket is the table's entry, nil for the run's own socket (the
	// context's).
	Socket *Socket
	// Addr is the address of its struct bpf_sock.
	Addr uint64
	// TCP says the pointer was to its struct bpf_tcp_sock.
	TCP bool
}

// Sock resolves a socket pointer: a table socket's bpf_sock or
// bpf_tcp_sock, or the run's own socket. ok is false for an address that
// is neither (an unverified program's).
func (r *Runner) Sock(addr uint64) (ref SockRef, ok bool) {
	if addr != 0 && addr == r.sock {
		return SockRef{Addr: addr}, true
	}
	if reg := r.socketRegion(); addr >= reg.Start && addr < reg.End {
		i, off := (addr-reg.Start)/sockSlot, (addr-reg.Start)%sockSlot
		base := reg.Start + i*sockSlot
		switch off {
		case 0:
			return SockRef{Socket: &r.sk.net.Sockets[i], Addr: base}, true
		case progtype.SockSize:
			return SockRef{Socket: &r.sk.net.Sockets[i], Addr: base, TCP: true}, true
		}
	}
	return SockRef{}, false
}

// SockState returns the state and protocol of a resolved socket, as its
// struct bpf_sock shows them.
func SockState(ref SockRef) (state uint8, proto uint8) {
	b := vm.Slice(ref.Addr, progtype.SockSize)
	return uint8(binary.LittleEndian.Uint32(b[72:])), uint8(binary.LittleEndian.Uint32(b[12:]))
}

// SocketByCookie returns the address of the struct bpf_sock of the run's
// socket whose cookie (SocketAt's) is cookie, 0 for none: a table
// socket, by its Cookie or the one SockCookie gives it, or the run's own
// socket where the program sees one. Sockmap and sockhash lookups find
// their sockets so.
func (r *Runner) SocketByCookie(cookie uint64) uint64 {
	if cookie == 0 {
		return 0
	}
	if r.sock != 0 && cookie == r.SocketCookie() {
		return r.sock
	}
	if r.ns.nsocks == 0 {
		return 0
	}
	socks := r.sk.net.Sockets[:r.ns.nsocks]
	for i := range socks {
		if socks[i].Cookie == cookie {
			return r.sockAddr(i)
		}
	}
	if i := cookie - (1<<62 | 1); i < uint64(len(socks)) && socks[i].Cookie == 0 {
		return r.sockAddr(int(i))
	}
	return 0
}

// SockCookie returns a resolved socket's cookie: a table socket's Cookie
// or, for 0, one of its own (its place in the table, above the run's
// own sockets'); the run's own socket's is SocketCookie's.
func (r *Runner) SockCookie(ref SockRef) uint64 {
	if ref.Socket == nil {
		return r.SocketCookie()
	}
	if ref.Socket.Cookie != 0 {
		return ref.Socket.Cookie
	}
	i := (ref.Addr - r.ns.socks.Addr()) / sockSlot
	return 1<<62 | (i + 1)
}

// TCPSockAddr returns the address of a table socket's struct
// bpf_tcp_sock.
func (ref SockRef) TCPSockAddr() uint64 { return ref.Addr + progtype.SockSize }

// sockAddr returns the address of table socket i's struct bpf_sock.
func (r *Runner) sockAddr(i int) uint64 { return r.ns.socks.Addr() + uint64(i*sockSlot) }

// Tuple is what a socket lookup looks for (struct bpf_sock_tuple): the
// packet's source (the socket's remote end) and destination (its local
// one). Ports are in host order.
type Tuple struct {
	Src, Dst netip.AddrPort
}

// Lookup finds the socket of protocol proto a packet of tuple t comes to,
// in the namespace netns (0: the run's) arriving on device dif, as the
// kernel's socket lookups do: for TCP an established (or time-wait,
// request) socket of exactly the tuple, else the best listener; for UDP
// the best scoring socket. It returns the address of its struct bpf_sock,
// 0 for none; full makes a request socket its listener and a time-wait
// socket none (bpf_sk_lookup_*, not bpf_skc_lookup_tcp).
func (r *Runner) Lookup(proto uint8, t Tuple, netns uint64, dif uint32, full bool) uint64 {
	n := r.Net()
	if netns == 0 {
		netns = n.netns()
	}
	i := -1
	if proto == ProtoTCP {
		i = n.established(t, netns, dif)
		if i < 0 {
			i = n.listener(t.Dst, netns, dif)
		}
	} else {
		i = n.udp(t, netns, dif)
	}
	if i < 0 {
		return 0
	}
	if full {
		switch n.Sockets[i].state() {
		case TCPNewSynRecv:
			if i = n.listener(n.Sockets[i].Local, netns, dif); i < 0 {
				return 0
			}
		case TCPTimeWait:
			return 0
		}
	}
	return r.sockAddr(i)
}

// Listener returns the address of the listener of a request socket (0
// for none).
func (r *Runner) Listener(s *Socket) uint64 {
	n := r.Net()
	netns := s.Netns
	if netns == 0 {
		netns = n.netns()
	}
	if i := n.listener(s.Local, netns, s.BoundDevIf); i >= 0 {
		return r.sockAddr(i)
	}
	return 0
}

// PeerNetns returns the cookie of the namespace of id nsid; ok is false
// for an id the run's namespace does not have.
func (r *Runner) PeerNetns(nsid int32) (uint64, bool) {
	for _, p := range r.Net().Peers {
		if p.ID == nsid {
			return p.Netns, true
		}
	}
	return 0, false
}

// inNetns reports whether s is in namespace netns.
func (n *Net) inNetns(s *Socket, netns uint64) bool {
	c := s.Netns
	if c == 0 {
		c = n.netns()
	}
	return c == netns
}

// devMatch reports whether a socket bound to bound takes packets from dif
// (inet_sk_bound_dev_eq without an L3 master device).
func devMatch(bound, dif uint32) bool { return bound == 0 || bound == dif }

// sameAddr reports whether a socket's address a equals the lookup's b:
// for an IPv4 lookup, the IPv4 address the socket keeps (an AF_INET6
// socket's mapped one), for IPv6 the 16 bytes.
func sameAddr(a, b netip.Addr) bool {
	if b.Is4() {
		return v4Of(a) == b.As4() && (a.Is4() || a.Is4In6() || a.IsUnspecified() && b.IsUnspecified())
	}
	return a.Is6() && a.As16() == b.As16()
}

// v4Lookup reports whether an IPv4 lookup may find s: AF_INET sockets and
// AF_INET6 ones that are not IPV6_V6ONLY.
func v4Lookup(s *Socket) bool { return s.family() == AFInet || !s.V6Only }

// established returns the index of the TCP socket connected by tuple t
// (established, time-wait or a request), -1 for none.
func (n *Net) established(t Tuple, netns uint64, dif uint32) int {
	v4 := t.Dst.Addr().Is4()
	for i := range n.Sockets {
		s := &n.Sockets[i]
		st := s.state()
		if s.Protocol != ProtoTCP || st == TCPListen || st == TCPClose || !s.Remote.IsValid() || !n.inNetns(s, netns) {
			continue
		}
		if v4 != (s.family() == AFInet || s.Local.Addr().Is4In6()) {
			continue
		}
		if s.Local.Port() == t.Dst.Port() && s.Remote.Port() == t.Src.Port() &&
			sameAddr(s.Local.Addr(), t.Dst.Addr()) && sameAddr(s.Remote.Addr(), t.Src.Addr()) && devMatch(s.BoundDevIf, dif) {
			return i
		}
	}
	return -1
}

// listener returns the index of the best TCP listener on local, -1 for
// none: those bound to the address itself first, then those bound to
// every address; among them the kernel's score (bound to the device,
// of the lookup's family).
func (n *Net) listener(local netip.AddrPort, netns uint64, dif uint32) int {
	v4 := local.Addr().Is4()
	return n.best(local.Addr(), func(s *Socket, addr netip.Addr) int {
		if s.Protocol != ProtoTCP || s.state() != TCPListen || s.Local.Port() != local.Port() || !n.inNetns(s, netns) ||
			v4 && !v4Lookup(s) || !v4 && s.family() != AFInet6 ||
			!sameAddr(s.Local.Addr(), addr) || !devMatch(s.BoundDevIf, dif) {
			return -1
		}
		sc := 1
		if s.BoundDevIf != 0 {
			sc = 2
		}
		if v4 && s.family() == AFInet {
			sc++
		}
		return sc
	})
}

// udp returns the index of the UDP socket a datagram of tuple t goes to,
// -1 for none: the best score among the sockets bound to its address,
// then among those bound to every address (the kernel's compute_score:
// connected sockets must match the source, and win).
func (n *Net) udp(t Tuple, netns uint64, dif uint32) int {
	v4 := t.Dst.Addr().Is4()
	// What a match on the source or the device weighs.
	step := 1
	if v4 {
		step = 4
	}
	return n.best(t.Dst.Addr(), func(s *Socket, addr netip.Addr) int {
		if s.Protocol != ProtoUDP || s.Local.Port() != t.Dst.Port() || !n.inNetns(s, netns) ||
			v4 && !v4Lookup(s) || !v4 && s.family() != AFInet6 ||
			!sameAddr(s.Local.Addr(), addr) || !devMatch(s.BoundDevIf, dif) {
			return -1
		}
		sc := 0
		if v4 {
			sc = 1
			if s.family() == AFInet {
				sc = 2
			}
		}
		if ra := s.Remote.Addr(); s.Remote.IsValid() && !ra.IsUnspecified() {
			if !sameAddr(ra, t.Src.Addr()) {
				return -1
			}
			sc += step
		}
		if s.Remote.Port() != 0 {
			if s.Remote.Port() != t.Src.Port() {
				return -1
			}
			sc += step
		}
		if s.BoundDevIf != 0 {
			sc += step
		}
		return sc
	})
}

// best returns the index of the socket of the highest score (score's
// result, negative for a socket that does not match) among those bound to
// dst, else among those bound to the unspecified address of its family
// (the kernel's two hash slots), -1 for none; the first of equal scores.
func (n *Net) best(dst netip.Addr, score func(s *Socket, bound netip.Addr) int) int {
	any := netip.IPv6Unspecified()
	if dst.Is4() {
		any = netip.IPv4Unspecified()
	}
	for _, addr := range []netip.Addr{dst, any} {
		best, top := -1, -1
		for i := range n.Sockets {
			if sc := score(&n.Sockets[i], addr); sc > top {
				best, top = i, sc
			}
		}
		if best >= 0 || addr == any {
			return best
		}
	}
	return -1
}

// SynOverflow records that the run made a SYN cookie for the listener at
// addr (the kernel's tcp_synq_overflow): its cookies are checked for the
// rest of the test run.
func (r *Runner) SynOverflow(addr uint64) {
	if !slices.Contains(r.ns.overflowed, addr) {
		r.ns.overflowed = append(r.ns.overflowed, addr)
	}
}

// SynOverflowed reports whether the listener ref overflowed recently: the
// world says so (Socket.SynFlood) or the run made a cookie for it.
func (r *Runner) SynOverflowed(ref SockRef) bool {
	return ref.Socket != nil && ref.Socket.SynFlood || slices.Contains(r.ns.overflowed, ref.Addr)
}

// Syncookies returns the run's SYN cookie setting, the kernel's default
// for none.
func (r *Runner) Syncookies() Syncookies {
	if n := r.Net(); n.Syncookies != nil {
		return *n.Syncookies
	}
	return Syncookies{Mode: 1}
}
