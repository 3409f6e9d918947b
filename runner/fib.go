package runner

import (
	"net/netip"
)

// The host's routing (Net.Routes, Net.Rules) and neighbour (Net.Neighbors)
// tables, which bpf_fib_lookup asks as the kernel's FIB and neighbour
// tables.

// RouteType is a route's type (the kernel's RTN_*), unicast by default.
type RouteType uint8

// Route types. Local, broadcast, anycast and multicast routes are never
// forwarded; blackhole, unreachable and prohibit ones drop the packet,
// each with its own bpf_fib_lookup result.
const (
	RouteUnicast RouteType = iota
	RouteLocal
	RouteBroadcast
	RouteAnycast
	RouteMulticast
	RouteBlackhole
	RouteUnreachable
	RouteProhibit
)

// dropping reports whether the route drops what it matches (it needs no
// device).
func (t RouteType) dropping() bool {
	return t == RouteBlackhole || t == RouteUnreachable || t == RouteProhibit
}

// Routing table ids.
const (
	TableDefault = 253
	TableMain    = 254
	TableLocal   = 255
)

// Route is a route of the host: packets to Dst go out of device Ifindex,
// to Gateway if it is valid (otherwise to their destination itself, on
// link).
type Route struct {
	Dst  netip.Prefix
	Type RouteType
	// Gateway is the next hop; an IPv6 one may serve an IPv4 route.
	Gateway netip.Addr
	Ifindex uint32
	// Table is the routing table (0 is TableMain).
	Table uint32
	// Metric is the route's priority (lower wins among routes of one
	// prefix), what bpf_fib_lookup returns in rt_metric.
	Metric uint32
	// Src is the preferred source address (BPF_FIB_LOOKUP_SRC); invalid:
	// the device's first address of the family.
	Src netip.Addr
	// MTU is the route's locked MTU (iproute2's "mtu lock N"), 0 for
	// the device's: bpf_fib_lookup checks against it. (An MTU that is
	// not locked does not count there, as in the kernel without
	// net.ipv4.ip_forward_use_pmtu: leave it 0.)
	MTU uint32
}

// Rule is a policy routing rule: lookups of packets with firewall mark
// Mark (under Mask; a zero Mask matches every packet) ask table Table.
// Lookups ask the local table, then the rules in order, then the main and
// default tables, as the kernel's default rules do.
type Rule struct {
	Mark, Mask uint32
	Table      uint32
}

// Neighbor is an entry of the neighbour (ARP, NDP) table: Addr on device
// Ifindex is at hardware address MAC. An Incomplete entry is not valid
// (not NUD_VALID): lookups find no neighbour.
type Neighbor struct {
	Ifindex    uint32
	Addr       netip.Addr
	MAC        [6]byte
	Incomplete bool
}

// FIBQuery is what bpf_fib_lookup asks the tables.
type FIBQuery struct {
	Dst, Src netip.Addr
	// Ifindex is the device the packet came in on or, with Output, goes
	// out of.
	Ifindex uint32
	Output  bool
	// Direct asks Table (0: main) alone, without rules.
	Direct bool
	Table  uint32
	Mark   uint32
}

// RouteLookup returns the route a lookup matches, nil for none: the
// longest prefix of the first table that has one, the lowest metric among
// its routes. Routes through a device that is down are dead; with Output,
// IPv4 routes out of another device do not match, IPv6 ones match after
// those out of it.
func (r *Runner) RouteLookup(q FIBQuery) *Route {
	n := r.Net()
	x := r.fibIndex()
	if q.Direct {
		t := q.Table
		if t == 0 {
			t = TableMain
		}
		return x.tableLookup(n, t, q)
	}
	// The local table, the rules' tables in order, main, default: asked
	// in turn without gathering them (no allocation per lookup).
	if rt := x.tableLookup(n, TableLocal, q); rt != nil {
		return rt
	}
	for i := range n.Rules {
		ru := &n.Rules[i]
		if q.Mark&ru.Mask == ru.Mark&ru.Mask {
			if rt := x.tableLookup(n, ru.Table, q); rt != nil {
				return rt
			}
		}
	}
	if rt := x.tableLookup(n, TableMain, q); rt != nil {
		return rt
	}
	return x.tableLookup(n, TableDefault, q)
}

// Neighbor returns the valid neighbour entry of addr on device ifindex.
func (r *Runner) Neighbor(ifindex uint32, addr netip.Addr) (*Neighbor, bool) {
	n := r.Net()
	for i := range n.Neighbors {
		nb := &n.Neighbors[i]
		if nb.Ifindex == ifindex && nb.Addr == addr {
			return nb, !nb.Incomplete
		}
	}
	return nil, false
}

// SourceAddr returns the source address of a packet to dst out of the
// route's device: the route's preferred one, else the device's first
// address of the family (for IPv6 a global one before a link-local one).
func (r *Runner) SourceAddr(rt *Route, dst netip.Addr) (netip.Addr, bool) {
	if rt.Src.IsValid() {
		return rt.Src, true
	}
	d, _ := r.Device(rt.Ifindex)
	var ll netip.Addr
	for _, a := range d.Addrs {
		if a.Is6() != dst.Is6() || a.Is4In6() {
			continue
		}
		if a.Is6() && a.IsLinkLocalUnicast() {
			if !ll.IsValid() {
				ll = a
			}
			continue
		}
		return a, true
	}
	return ll, ll.IsValid()
}
