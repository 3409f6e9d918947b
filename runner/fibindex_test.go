package runner

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// scanLookup is table t's lookup by a scan of every route, the index's
// reference: the longest prefix, then the output device (IPv6), then the
// lowest metric, the first route on a tie.
func scanLookup(n *Net, t uint32, q FIBQuery) *Route {
	var best *Route
	bestScore := 0
	for i := range n.Routes {
		rt := &n.Routes[i]
		table := rt.Table
		if table == 0 {
			table = TableMain
		}
		if table != t || rt.Dst.Addr().Is6() != q.Dst.Is6() || !rt.Dst.Contains(q.Dst) {
			continue
		}
		score := 2
		if !rt.Type.dropping() {
			if d := n.device(rt.Ifindex); d == nil || d.Down {
				continue
			}
			if q.Output && rt.Ifindex != q.Ifindex {
				if !q.Dst.Is6() {
					continue
				}
				score = 1
			}
		}
		if best == nil || rt.Dst.Bits() > best.Dst.Bits() ||
			rt.Dst.Bits() == best.Dst.Bits() && (score > bestScore || score == bestScore && rt.Metric < best.Metric) {
			best, bestScore = rt, score
		}
	}
	return best
}

// TestFIBIndex compares the route index's lookups with a scan of the
// routes, on tables of prefixes of every length (unmasked ones, ties of
// metric and device, a device that is down), for random destinations
// near the prefixes, both families, with and without Output.
func TestFIBIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := &Net{Devices: []Device{{Ifindex: 2}, {Ifindex: 3}, {Ifindex: 4, Down: true}}}
	var bases []netip.Addr
	for range 300 {
		var a netip.Addr
		if rng.IntN(2) == 0 {
			a = netip.AddrFrom4([4]byte{10, byte(rng.IntN(3)), byte(rng.IntN(256)), byte(rng.IntN(256))})
		} else {
			a = netip.AddrFrom16([16]byte{0xfd, 0, 15: byte(rng.IntN(256)), 7: byte(rng.IntN(3))})
		}
		bases = append(bases, a)
		bits := rng.IntN(a.BitLen() + 1)
		n.Routes = append(n.Routes, Route{
			Dst:     netip.PrefixFrom(a, bits), // not masked
			Type:    []RouteType{RouteUnicast, RouteUnicast, RouteBlackhole, RouteLocal}[rng.IntN(4)],
			Ifindex: uint32(2 + rng.IntN(3)),
			Table:   []uint32{0, TableLocal, 100}[rng.IntN(3)],
			Metric:  uint32(rng.IntN(3)),
		})
	}
	var r Runner
	r.sk.net = n
	x := r.fibIndex()
	for i := range 20000 {
		a := bases[rng.IntN(len(bases))]
		b := a.AsSlice()
		b[len(b)-1-rng.IntN(len(b))] ^= byte(1 << rng.IntN(8))
		dst, _ := netip.AddrFromSlice(b)
		q := FIBQuery{Dst: dst, Output: i%2 == 0, Ifindex: uint32(2 + rng.IntN(2))}
		for _, tb := range []uint32{TableMain, TableLocal, 100, 7} {
			if got, want := x.tableLookup(n, tb, q), scanLookup(n, tb, q); got != want {
				t.Fatalf("table %d, %+v: index %+v, scan %+v", tb, q, got, want)
			}
		}
	}
}
