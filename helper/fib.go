package helper

import (
	"encoding/binary"
	"net/netip"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// fibHelpers look packets up in the host's routing and neighbour tables
// (runner.Net.Routes, Rules, Neighbors, Devices), for tc and XDP
// (net/core/filter.c).
var fibHelpers = []Helper{
	{Proto: Proto{Name: "bpf_fib_lookup", Args: [5]ArgType{ArgCtx, ArgWriteMem, ArgConstSize, ArgAnything}}, Func: helperFIBLookup},
}

// struct bpf_fib_lookup: its size and offsets (unions share them).
const (
	fibSize      = 64
	fibFamily    = 0
	fibTotLen    = 6 // tot_len in, mtu_result out
	fibIfindex   = 8
	fibMetric    = 12 // tos, flowinfo in; rt_metric out
	fibSrc       = 16
	fibDst       = 32
	fibVlanProto = 48 // tbid in
	fibVlanTCI   = 50
	fibMark      = 52 // mark in; smac out
	fibSMAC      = 52
	fibDMAC      = 58
)

// bpf_fib_lookup's flags and results (BPF_FIB_LOOKUP_*, BPF_FIB_LKUP_RET_*).
const (
	fibDirect    = 1 << 0
	fibOutput    = 1 << 1
	fibSkipNeigh = 1 << 2
	fibTBID      = 1 << 3
	fibSrcFlag   = 1 << 4
	fibMarkFlag  = 1 << 5
	fibFlags     = fibDirect | fibOutput | fibSkipNeigh | fibTBID | fibSrcFlag | fibMarkFlag

	fibSuccess     = 0
	fibBlackhole   = 1
	fibUnreachable = 2
	fibProhibit    = 3
	fibNotFwded    = 4
	fibFwdDisabled = 5
	fibNoNeigh     = 7
	fibFragNeeded  = 8
	fibNoSrcAddr   = 9

	eafnosupport = 97
	vlanHeader   = 4
	ipMaxMTU     = 0xffff
	ip6MaxMTU    = 0xffff + 40
	ip6MinMTU    = 1280
)

// helperFIBLookup is bpf_fib_lookup(ctx, params, plen, flags): the route
// of the packet params describes, its next hop's addresses written back
// into params, and a BPF_FIB_LKUP_RET_* code; -EINVAL for a short plen or
// unknown flags, -EAFNOSUPPORT for a family neither AF_INET nor AF_INET6,
// -ENODEV for an ifindex of no device. tc checks the MTU when params gives
// tot_len, and otherwise the packet against the resulting device's; XDP
// always checks tot_len.
func helperFIBLookup(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	if uint32(r3) < fibSize {
		return neg(einval), nil
	}
	flags := uint32(r4)
	if flags&^fibFlags != 0 {
		return neg(einval), nil
	}
	p, err := e.Bytes(r2, fibSize, true)
	if err != nil {
		return 0, err
	}
	r := runner.Of(e)
	skb := r.Program().Type.Skb
	le := binary.NativeEndian
	checkMTU := !skb || le.Uint16(p[fibTotLen:]) != 0
	var rc int64
	switch p[fibFamily] {
	case runner.AFInet, runner.AFInet6:
		rc = fibLookup(r, p, flags, checkMTU)
	default:
		return neg(eafnosupport), nil
	}
	if skb && rc == fibSuccess && !checkMTU {
		d := r.DeviceRef(le.Uint32(p[fibIfindex:]))
		ctx := r.SkbContext()
		pktLen := binary.LittleEndian.Uint32(ctx[runner.SkbLen:])
		gso := binary.LittleEndian.Uint32(ctx[runner.SkbGSOSize:]) != 0
		if d.Down || pktLen > d.MTU+d.HeaderLen+vlanHeader && !gso {
			rc = fibFragNeeded
		}
		le.PutUint16(p[fibTotLen:], uint16(d.MTU))
	}
	return uint64(rc), nil
}

// fibLookup is bpf_ipv4_fib_lookup and bpf_ipv6_fib_lookup.
func fibLookup(r *runner.Runner, p []byte, flags uint32, checkMTU bool) int64 {
	le := binary.NativeEndian
	v6 := p[fibFamily] == runner.AFInet6
	var dst, src netip.Addr
	if v6 {
		dst = netip.AddrFrom16([16]byte(p[fibDst : fibDst+16]))
		src = netip.AddrFrom16([16]byte(p[fibSrc : fibSrc+16]))
		// Link-local, multicast and loopback addresses are never
		// forwarded (rt6_need_strict).
		if needStrict(dst) || needStrict(src) {
			return fibNotFwded
		}
	} else {
		dst = netip.AddrFrom4([4]byte(p[fibDst : fibDst+4]))
		src = netip.AddrFrom4([4]byte(p[fibSrc : fibSrc+4]))
	}
	ifindex := le.Uint32(p[fibIfindex:])
	dev := r.DeviceRef(ifindex)
	if dev == nil {
		return -enodev
	}
	if !dev.Forwarding {
		return fibFwdDisabled
	}
	q := runner.FIBQuery{Dst: dst, Src: src, Ifindex: ifindex, Output: flags&fibOutput != 0, Direct: flags&fibDirect != 0}
	if q.Direct {
		if flags&fibTBID != 0 {
			q.Table = le.Uint32(p[fibVlanProto:])
			le.PutUint32(p[fibVlanProto:], 0)
		}
	} else if flags&fibMarkFlag != 0 {
		q.Mark = le.Uint32(p[fibMark:])
	}
	rt := r.RouteLookup(q)
	if rt == nil {
		return fibNotFwded
	}
	switch rt.Type {
	case runner.RouteUnicast:
	case runner.RouteBlackhole:
		return fibBlackhole
	case runner.RouteUnreachable:
		return fibUnreachable
	case runner.RouteProhibit:
		return fibProhibit
	default:
		return fibNotFwded
	}
	nh := r.DeviceRef(rt.Ifindex)
	var mtu uint32
	if checkMTU {
		mtu = routeMTU(rt, nh, v6)
		if uint32(le.Uint16(p[fibTotLen:])) > mtu {
			le.PutUint16(p[fibTotLen:], uint16(mtu))
			return fibFragNeeded
		}
	}
	gw := rt.Gateway
	if v6 && gw.IsValid() {
		a := gw.As16()
		copy(p[fibDst:], a[:])
	}
	le.PutUint32(p[fibMetric:], rt.Metric)
	le.PutUint32(p[fibIfindex:], rt.Ifindex)
	if flags&fibSrcFlag != 0 {
		s, ok := r.SourceAddr(rt, dst)
		switch {
		case v6 && !ok:
			return fibNoSrcAddr
		case v6:
			a := s.As16()
			copy(p[fibSrc:], a[:])
		default:
			var a [4]byte
			if ok {
				a = s.As4()
			}
			copy(p[fibSrc:], a[:])
		}
	}
	next := dst
	if !v6 && gw.IsValid() {
		if gw.Is4() {
			a := gw.As4()
			copy(p[fibDst:], a[:])
		} else {
			// An IPv6 next hop of an IPv4 route.
			p[fibFamily] = runner.AFInet6
			a := gw.As16()
			copy(p[fibDst:], a[:])
		}
	}
	if gw.IsValid() {
		next = gw
	}
	if flags&fibSkipNeigh == 0 {
		n, ok := r.Neighbor(rt.Ifindex, next)
		if !ok {
			return fibNoNeigh
		}
		copy(p[fibDMAC:], n.MAC[:])
		copy(p[fibSMAC:], nh.MAC[:])
	}
	le.PutUint16(p[fibVlanProto:], 0)
	le.PutUint16(p[fibVlanTCI:], 0)
	if mtu != 0 {
		le.PutUint16(p[fibTotLen:], uint16(mtu))
	}
	return fibSuccess
}

// routeMTU is the MTU of a route out of device nh: its own, else the
// device's, at most IP_MAX_MTU (IPv4), at least IPV6_MIN_MTU and at most
// IP6_MAX_MTU (IPv6).
func routeMTU(rt *runner.Route, nh *runner.Device, v6 bool) uint32 {
	if rt.MTU != 0 {
		return rt.MTU
	}
	if v6 {
		return min(max(nh.MTU, ip6MinMTU), ip6MaxMTU)
	}
	return min(nh.MTU, ipMaxMTU)
}

// needStrict reports whether an IPv6 address is multicast, link-local or
// loopback (rt6_need_strict).
func needStrict(a netip.Addr) bool {
	return a.IsMulticast() || a.IsLinkLocalUnicast() || a.IsLoopback()
}
