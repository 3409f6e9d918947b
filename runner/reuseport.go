package runner

import "net/netip"

// Reuseport groups. A socket with Reuseport set is in the group of the
// world's sockets bound as it is (the kernel's sock_reuseport): the same
// namespace, protocol, family, address, port, device and owner. An
// sk_reuseport run's socket (Net.Socket) is the group member the
// kernel's lookup found, whose group the program selects in.

// reuseKey is what the sockets of one reuseport group share.
type reuseKey struct {
	netns    uint64
	proto    uint8
	v6       bool
	local    netip.AddrPort
	dev, uid uint32
}

func (n *Net) reuseKey(s *Socket) reuseKey {
	netns := s.Netns
	if netns == 0 {
		netns = n.netns()
	}
	return reuseKey{netns: netns, proto: s.Protocol, v6: s.Local.Addr().Is6(), local: s.Local, dev: s.BoundDevIf, uid: s.UID}
}

// Errnos of bpf_sk_select_reuseport's checks.
const (
	errnoENOENT       = 2
	errnoEINVAL       = 22
	errnoEAFNOSUPPORT = 97
	errnoEPROTOTYPE   = 91
	errnoEBADFD       = 77
)

// ReuseportSelect checks the socket of cookie that bpf_sk_select_reuseport
// found in a map (a reuseport array: sockarray) against the run's
// reuseport group, as the kernel's sk_select_reuseport: 0 when it may
// take the packet, else the negative errno. A socket the world lacks has
// closed: ENOENT (a reuseport array drops it). One in no group: ENOENT
// from a reuseport array (which holds only members, so it left its
// group), EINVAL from a sockmap or sockhash. One of another group:
// EPROTOTYPE for another protocol, EAFNOSUPPORT for another family,
// EBADFD otherwise. A run whose own socket is in no group (no world, or
// Net.Socket without Reuseport) has no group to check against: any
// socket the map holds is taken.
func (r *Runner) ReuseportSelect(cookie uint64, sockarray bool) int64 {
	n := r.Net()
	own := n.Socket
	if own == nil || !own.Reuseport {
		return 0
	}
	if own.Cookie != 0 && cookie == own.Cookie {
		return 0
	}
	var sel *Socket
	for i := range n.Sockets {
		if s := &n.Sockets[i]; s.Cookie == cookie {
			sel = s
			break
		}
	}
	switch {
	case sel == nil:
		return -errnoENOENT
	case !sel.Reuseport:
		if sockarray {
			return -errnoENOENT
		}
		return -errnoEINVAL
	}
	a, b := n.reuseKey(own), n.reuseKey(sel)
	switch {
	case a == b:
		return 0
	case a.proto != b.proto:
		return -errnoEPROTOTYPE
	case a.v6 != b.v6:
		return -errnoEAFNOSUPPORT
	}
	return -errnoEBADFD
}
