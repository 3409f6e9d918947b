package runner

import (
	"encoding/binary"
	"net/netip"

	"github.com/bpfvm/bpfvm/vm"
)

// The socket buffer model. A run of a program on struct __sk_buff (a
// progtype.Type with Skb set) runs on a socket buffer as the kernel's test
// run builds one (bpf_prog_test_run_skb): linear, its MAC header at the
// start of the input frame and its network header after the Ethernet
// header, no transport header, CHECKSUM_NONE, no hash, no VLAN tag, owned
// by a socket. The context fields that mirror the socket buffer (len,
// protocol, pkt_type, vlan_*, hash, gso_*) live in the context itself, so
// that the program's loads see them; the skb helpers keep them up to date.
// What the context does not hold is Skb. The headers' addresses are
// vm.Env's MacHeader and NetHeader, which LD_ABS and LD_IND read too.

// struct __sk_buff offsets of the fields the skb helpers keep up to date.
const (
	SkbLen         = 0
	SkbPktType     = 4
	SkbMark        = 8
	SkbProtocol    = 16
	SkbVlanPresent = 20
	SkbVlanTCI     = 24
	SkbVlanProto   = 28
	SkbIfindex     = 40
	SkbHash        = 68
	SkbGSOSegs     = 164
	SkbGSOSize     = 176
)

// SkbMaxLen is the kernel's BPF_SKB_MAX_LEN (SKB_MAX_ALLOC: four 4 KiB
// pages less the 320 bytes of struct skb_shared_info on x86-64), the
// longest packet bpf_skb_change_tail, bpf_skb_change_head and
// bpf_skb_adjust_room grow a packet to. A test run leaves this much room
// on each side of a socket buffer's packet, so that growing it never moves
// it (the kernel reallocates; bpfvm need not).
const SkbMaxLen = 4<<12 - 320

// Skb is what a run's socket buffer holds beyond its bytes, its headers
// and the context fields.
type Skb struct {
	// Trans is the transport header's address, 0 when it is not set (the
	// kernel's test run never sets it; bpf_skb_adjust_room's L4
	// encapsulation does).
	Trans uint64
	// SWHash and L4Hash are skb->sw_hash and skb->l4_hash: the hash in
	// the context's hash field is valid (bpf_set_hash, or computed by
	// bpf_get_hash_recalc).
	SWHash, L4Hash bool
	// CsumUnnecessary and CsumLevel are skb->ip_summed ==
	// CHECKSUM_UNNECESSARY and skb->csum_level (bpf_csum_level); the
	// packet is CHECKSUM_NONE otherwise, as test-run packets are.
	CsumUnnecessary bool
	CsumLevel       uint8
	// Encap is skb->encapsulation (bpf_skb_adjust_room's encapsulation
	// flags set it).
	Encap bool
	// Tunnel is the packet's tunnel metadata (skb_tunnel_info): the one it
	// was received with (Net.Tunnel), or the one bpf_skb_set_tunnel_key
	// set (TunnelTX). nil: none.
	Tunnel   *Tunnel
	TunnelTX bool
	// tx holds what bpf_skb_set_tunnel_key sets, the kernel's per-CPU
	// metadata_dst, reused from run to run.
	tx Tunnel
}

// Net is the host's side of a run of a networking program: what its
// helpers read of the world beyond the packet. The zero value is the
// world of the kernel's test run on the loopback device. Runs only read
// it, so that concurrent runs may share one; Validate says whether it
// holds together (a run refuses one that does not).
type Net struct {
	// Socket is the socket the packet belongs to (skb->sk); nil is the
	// kernel's test run's: a socket of uid 0 in the root cgroup, with a
	// cookie of its own. NoSocket makes the packet one without a socket
	// (as at tc ingress).
	Socket   *Socket
	NoSocket bool
	// Tunnel is the tunnel metadata the packet was received with
	// (bpf_skb_get_tunnel_key, bpf_skb_get_tunnel_opt); nil: none.
	Tunnel *Tunnel
	// Devices are the host's network devices besides the loopback device
	// (ifindex 1, MTU 65536), which is there unless Devices names
	// ifindex 1 itself: what bpf_check_mtu and bpf_clone_redirect look
	// up.
	Devices []Device
	// RouteRealm is the realm of the packet's route (bpf_get_route_realm).
	RouteRealm uint32
	// ClassID is the net_cls class id bpf_get_cgroup_classid returns.
	ClassID uint32
	// Cgroups are the host's cgroup v2 hierarchy below the root (see
	// Cgroup): what bpf_skb_under_cgroup and
	// bpf_current_task_under_cgroup walk.
	Cgroups []Cgroup
	// Cgroup is the id of the cgroup of the task the program runs in
	// (bpf_current_task_under_cgroup); 0 is the root cgroup.
	Cgroup uint64
	// AttachCgroup is the id of the cgroup the program runs attached to:
	// with its attach type, the storage bpf_get_local_storage gives (0:
	// the root cgroup).
	AttachCgroup uint64

	// Sockets is the host's socket table: what bpf_sk_lookup_tcp,
	// bpf_sk_lookup_udp and bpf_skc_lookup_tcp find (net.go).
	Sockets []Socket
	// Netns is the cookie of the run's network namespace
	// (bpf_get_netns_cookie); 0 is the initial namespace's (InitNetns).
	Netns uint64
	// Peers are the other namespaces the run's has ids for, which the
	// socket lookups' netns_id argument names.
	Peers []Peer

	// Routes, Rules and Neighbors are the routing and neighbour tables
	// bpf_fib_lookup answers from (fib.go), with the devices' Addrs,
	// MAC, Down and Forwarding.
	Routes    []Route
	Rules     []Rule
	Neighbors []Neighbor

	// Syncookies is the namespace's SYN cookie setting and secret (the
	// TCP syncookie helpers, helper/syncookie.go); nil is the kernel's
	// default setting (net.ipv4.tcp_syncookies 1) with a zero secret at
	// minute 0.
	Syncookies *Syncookies
}

// Syncookies is what the TCP syncookie helpers make and check cookies
// with (DESIGN.md: bpfvm's cookies are its own, deterministic).
type Syncookies struct {
	// Mode is net.ipv4.tcp_syncookies: 0 never sends cookies (the socket
	// helpers fail), 1 sends them for a listener whose SYN queue
	// overflows (Socket.SynFlood), 2 always.
	Mode uint8
	// Secret keys the cookies' hash.
	Secret [16]byte
	// Minute is the kernel's tcp_cookie_time(), the minute counter a
	// cookie carries: one made at minute m is valid at m and m+1.
	Minute uint32
}

// Socket is a socket of the host, as the socket helpers see it: the
// packet's (Net.Socket), or one of the socket table (Net.Sockets), whose
// lookups match the fields after CgroupID and whose struct bpf_sock
// (and, for TCP, struct bpf_tcp_sock) a program reads shows them.
type Socket struct {
	// Cookie is what bpf_get_socket_cookie returns; 0 gives the socket a
	// cookie of its own, as the kernel's first call does. It is the
	// socket's identity (sockmaps key sockets by it).
	Cookie uint64
	// UID is the owner's uid (bpf_get_socket_uid).
	UID uint32
	// CgroupID is the id of the socket's cgroup v2 (bpf_skb_cgroup_id).
	CgroupID uint64

	// Protocol is IPPROTO_TCP (6) or IPPROTO_UDP (17).
	Protocol uint8
	// Local is the address and port the socket is bound to (an
	// unspecified address: every address); an IPv6 address (an
	// IPv4-mapped one too) makes an AF_INET6 socket. Remote is the peer
	// of a connected socket, the zero AddrPort for none.
	Local, Remote netip.AddrPort
	// State is the socket's state in the kernel's TCP numbering
	// (TCP_ESTABLISHED 1, TCP_TIME_WAIT 6, TCP_CLOSE 7, TCP_LISTEN 10,
	// TCP_NEW_SYN_RECV 12 ...); 0 is TCP_ESTABLISHED with a Remote and
	// otherwise TCP_LISTEN for TCP, TCP_CLOSE for UDP.
	State uint8
	// V6Only is IPV6_V6ONLY: an AF_INET6 socket IPv4 lookups skip.
	V6Only bool
	// SynFlood says a TCP listener's SYN queue is full and overflowed
	// recently: bpf_tcp_gen_syncookie makes cookies for it under
	// tcp_syncookies 1 and bpf_tcp_check_syncookie checks them (the
	// kernel's inet_csk_reqsk_queue_is_full and
	// !tcp_synq_no_recent_overflow).
	SynFlood bool
	// Reuseport is SO_REUSEPORT: the socket is in a reuseport group
	// (sk_lookup's selection of one must say BPF_SK_LOOKUP_F_NO_REUSEPORT
	// in a test run, which has no packet to pick a member with).
	Reuseport bool
	// BoundDevIf is the device the socket is bound to (SO_BINDTOIFINDEX),
	// 0 for none; Mark and Priority are SO_MARK and SO_PRIORITY.
	BoundDevIf, Mark, Priority uint32
	// Netns is the cookie of the socket's network namespace, 0 for the
	// run's.
	Netns uint64
	// TCP is what struct bpf_tcp_sock shows of a TCP socket.
	TCP TCPInfo
}

// TCPInfo is struct bpf_tcp_sock: a TCP socket's counters, as bpf_tcp_sock
// shows them.
type TCPInfo struct {
	SndCwnd, SrttUs, RttMin, SndSsthresh, RcvNxt, SndNxt, SndUna, MssCache uint32
	EcnFlags, RateDelivered, RateIntervalUs, PacketsOut, RetransOut        uint32
	TotalRetrans, SegsIn, DataSegsIn, SegsOut, DataSegsOut, LostOut        uint32
	SackedOut                                                              uint32
	BytesReceived, BytesAcked                                              uint64
	DsackDups, Delivered, DeliveredCE, IcskRetransmits                     uint32
}

// Peer is a network namespace the run's has an id for (its nsid).
type Peer struct {
	// ID is the namespace's id as the run's namespace knows it (>= 0).
	ID int32
	// Netns is the namespace's cookie, which Socket.Netns names.
	Netns uint64
}

// Device is a network device of the host.
type Device struct {
	// Ifindex is the device's interface index (> 0).
	Ifindex uint32
	// MTU is the device's MTU, its largest L3 packet.
	MTU uint32
	// HeaderLen is its link-layer header length (hard_header_len; 0 for
	// devices without one, such as tunnels).
	HeaderLen uint32
	// MAC is its hardware address (bpf_fib_lookup's smac).
	MAC [6]byte
	// Addrs are its addresses, in order: the source addresses
	// bpf_fib_lookup's BPF_FIB_LOOKUP_SRC picks from.
	Addrs []netip.Addr
	// Down says the device is down: routes through it are dead.
	Down bool
	// Forwarding is the device's IPv4 and IPv6 forwarding sysctl; off
	// (as the kernel's default), bpf_fib_lookup on it gives
	// BPF_FIB_LKUP_RET_FWD_DISABLED.
	Forwarding bool
}

// loopback is the loopback device as the kernel sets it up.
var loopback = Device{Ifindex: 1, MTU: 1 << 16, HeaderLen: ethHeader}

// Tunnel is a packet's tunnel metadata (struct ip_tunnel_info): the
// outer headers of the tunnel it was received on, or those
// bpf_skb_set_tunnel_key asked to send it with.
type Tunnel struct {
	// ID is the tunnel id (VNI, GRE key).
	ID uint64
	// IPv6 says the addresses are IPv6 ones; IPv4 addresses are the first
	// four bytes of Src and Dst.
	IPv6 bool
	// Src and Dst are the outer source and destination addresses, in
	// network byte order.
	Src, Dst [16]byte
	// TOS, TTL and Label (IPv6 flow label) of the outer header.
	TOS, TTL uint8
	Label    uint32
	// Flags are bpf_skb_set_tunnel_key's flags (BPF_F_ZERO_CSUM_TX,
	// BPF_F_DONT_FRAGMENT, BPF_F_SEQ_NUMBER, BPF_F_TUNINFO_IPV6).
	Flags uint64
	// Options are the tunnel options (Geneve TLVs, VXLAN GBP ...), at
	// most 255 bytes.
	Options []byte
}

// Clone is a copy of the packet a program sent with bpf_clone_redirect.
type Clone struct {
	// Ifindex is the device it went to; Flags the helper's flags
	// (BPF_F_INGRESS: to the device's ingress).
	Ifindex uint32
	Flags   uint64
	// Packet is the packet as it was when cloned, from its MAC header.
	Packet []byte
}

// NextHop is the next hop bpf_redirect_neigh was given (struct
// bpf_redir_neigh): an address family (AF_INET, AF_INET6) and the
// address, in network byte order.
type NextHop struct {
	Family uint32
	Addr   [16]byte
}

// skbState is the per-run socket buffer state of a runner.
type skbState struct {
	skb Skb
	net *Net
	// cookie numbers the default socket's cookies, one per run.
	cookie uint64
	// clones are the run's bpf_clone_redirect copies, reused.
	clones []Clone
}

// beginSkb sets up the socket buffer of a run on net (nil: the test
// run's world).
func (r *Runner) beginSkb(net *Net) {
	r.sk.skb = Skb{tx: Tunnel{Options: r.sk.skb.tx.Options[:0]}}
	r.sk.cookie++
	r.sk.clones = r.sk.clones[:0]
	if net != nil && net.Tunnel != nil {
		r.sk.skb.Tunnel = net.Tunnel
	}
}

// Skb returns the run's socket buffer state, for the skb helpers to read
// and change.
func (r *Runner) Skb() *Skb { return &r.sk.skb }

// Net returns the host's world of the run (never nil: the kernel's test
// run's when the run has none).
func (r *Runner) Net() *Net {
	if r.sk.net == nil {
		return &noNet
	}
	return r.sk.net
}

// skbNet returns the host's world of a run on a socket buffer, the
// kernel's test run's for another program (whose context has no packet
// socket).
func (r *Runner) skbNet() *Net {
	if !r.prog.Type.Skb {
		return &noNet
	}
	return r.Net()
}

var noNet Net

// SkbSocket returns the socket of the run's packet, nil for none.
func (r *Runner) SkbSocket() *Socket {
	n := r.skbNet()
	switch {
	case n.NoSocket:
		return nil
	case n.Socket != nil:
		return n.Socket
	}
	return &testSocket
}

// testSocket is the socket of the kernel's test run: uid 0, and bpfvm
// puts it in the root cgroup (id 1).
var testSocket = Socket{CgroupID: 1}

// SocketCookie returns bpf_get_socket_cookie's value for the run's
// socket: its Cookie, or one of its own (unique among the runs of the
// runner, never 0).
func (r *Runner) SocketCookie() uint64 {
	n := r.Net()
	if n.NoSocket {
		return 0
	}
	if n.Socket != nil && n.Socket.Cookie != 0 {
		return n.Socket.Cookie
	}
	return uint64(r.cpu+1)<<48 | r.sk.cookie&(1<<48-1)
}

// Device returns the host's device ifindex; ok is false when there is
// none.
func (r *Runner) Device(ifindex uint32) (Device, bool) {
	if d := r.Net().device(ifindex); d != nil {
		return *d, true
	}
	return Device{}, false
}

// DeviceRef is Device without the copy: the world's entry, read-only, nil
// when there is none.
func (r *Runner) DeviceRef(ifindex uint32) *Device { return r.Net().device(ifindex) }

// device returns the world's device ifindex (the loopback device unless
// Devices names ifindex 1), nil for none; it does not copy the entry.
func (n *Net) device(ifindex uint32) *Device {
	for i := range n.Devices {
		if d := &n.Devices[i]; d.Ifindex == ifindex {
			return d
		}
	}
	if ifindex == loopback.Ifindex {
		return &loopback
	}
	return nil
}

// SkbContext returns the run's struct __sk_buff, nil when the program
// does not run on a socket buffer (an unverified program of another type
// may call any helper).
func (r *Runner) SkbContext() []byte {
	if !r.prog.Type.Skb {
		return nil
	}
	return vm.Slice(r.buf.Addr(), uint64(r.prog.Type.ContextSize))
}

// Headers returns the addresses of the MAC and network headers.
func (r *Runner) Headers() (mac, net uint64) { return r.env.MacHeader, r.env.NetHeader }

// SetHeaders moves the MAC and network headers.
func (r *Runner) SetHeaders(mac, net uint64) { r.env.MacHeader, r.env.NetHeader = mac, net }

// SetSkbPacket moves the packet of a socket buffer (SetPacket) and keeps
// __sk_buff.len its length.
func (r *Runner) SetSkbPacket(p Packet) {
	r.setPacket(p)
	binary.LittleEndian.PutUint32(r.SkbContext()[SkbLen:], uint32(p.End-p.Data))
}

// AddClone records a bpf_clone_redirect copy of the packet from its MAC
// header.
func (r *Runner) AddClone(ifindex uint32, flags uint64) {
	from := min(r.env.MacHeader, r.pkt.Data)
	if from == 0 {
		from = r.pkt.Data
	}
	pkt := append([]byte(nil), vm.Slice(from, r.pkt.End-from)...)
	r.sk.clones = append(r.sk.clones, Clone{Ifindex: ifindex, Flags: flags, Packet: pkt})
}

// TunnelTX returns the tunnel metadata bpf_skb_set_tunnel_key fills in,
// cleared, and makes it the packet's.
func (r *Runner) TunnelTX() *Tunnel {
	s := &r.sk.skb
	s.tx = Tunnel{Options: s.tx.Options[:0]}
	s.Tunnel, s.TunnelTX = &s.tx, true
	return &s.tx
}
