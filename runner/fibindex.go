package runner

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
)

// fibIndex is a run's index of its world's routes, built at the run's
// first bpf_fib_lookup from the Net it runs on (a snapshot: the world
// does not change during a run) and reused across the run's repeats:
// each table's routes of one family, longest prefix first, with their
// destinations as masked 128-bit words, so that a lookup compares words
// and stops at the first prefix length below its match. Its slices are
// reused from run to run: a lookup allocates nothing.
type fibIndex struct {
	built   bool
	entries []fibEntry
	// tables are the (table, family) runs of entries, in entries' order.
	tables []fibTable
}

// fibEntry is one route of the index: its masked destination and mask.
type fibEntry struct {
	hi, lo, mhi, mlo uint64
	bits             int
	rt               *Route
}

// fibTable is the entries [start, end) of table id and family v6.
type fibTable struct {
	id         uint32
	v6         bool
	start, end int
}

// fibIndex returns the run's route index, building it on first use.
func (r *Runner) fibIndex() *fibIndex {
	x := &r.ns.fib
	if !x.built {
		x.build(r.Net())
	}
	return x
}

// addrWords is an address as two 64-bit words, an IPv4 one in the high
// 32 bits of hi.
func addrWords(a netip.Addr) (hi, lo uint64) {
	if a.Is4() {
		b := a.As4()
		return uint64(binary.BigEndian.Uint32(b[:])) << 32, 0
	}
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// maskWords is the mask of a prefix length as two 64-bit words.
func maskWords(bits int) (hi, lo uint64) {
	switch {
	case bits <= 0:
		return 0, 0
	case bits < 64:
		return ^uint64(0) << (64 - bits), 0
	case bits == 64:
		return ^uint64(0), 0
	case bits < 128:
		return ^uint64(0), ^uint64(0) << (128 - bits)
	}
	return ^uint64(0), ^uint64(0)
}

// build indexes n's routes: grouped by table and family in the order
// tables first appear, each group longest prefix first and otherwise in
// the world's order (a stable sort), which keeps tableLookup's choice
// among routes of one prefix length that of a scan of Routes.
func (x *fibIndex) build(n *Net) {
	x.entries = x.entries[:0]
	x.tables = x.tables[:0]
	for i := range n.Routes {
		rt := &n.Routes[i]
		hi, lo := addrWords(rt.Dst.Addr())
		mhi, mlo := maskWords(rt.Dst.Bits())
		x.entries = append(x.entries, fibEntry{hi: hi & mhi, lo: lo & mlo, mhi: mhi, mlo: mlo, bits: rt.Dst.Bits(), rt: rt})
	}
	key := func(e *fibEntry) (uint32, bool) {
		t := e.rt.Table
		if t == 0 {
			t = TableMain
		}
		return t, e.rt.Dst.Addr().Is6()
	}
	slices.SortStableFunc(x.entries, func(a, b fibEntry) int {
		ta, va := key(&a)
		tb, vb := key(&b)
		if c := cmp.Compare(ta, tb); c != 0 {
			return c
		}
		if va != vb {
			if va {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.bits, a.bits)
	})
	for i := range x.entries {
		t, v6 := key(&x.entries[i])
		if k := len(x.tables); k > 0 && x.tables[k-1].id == t && x.tables[k-1].v6 == v6 {
			x.tables[k-1].end = i + 1
			continue
		}
		x.tables = append(x.tables, fibTable{id: t, v6: v6, start: i, end: i + 1})
	}
	x.built = true
}

// tableLookup is RouteLookup in table t: the longest prefix holding the
// destination among live routes, then (IPv6 output lookups) those out of
// the query's device, then the lowest metric, the first of the world's
// order on a tie.
func (x *fibIndex) tableLookup(n *Net, t uint32, q FIBQuery) *Route {
	v6 := q.Dst.Is6()
	var es []fibEntry
	for _, tb := range x.tables {
		if tb.id == t && tb.v6 == v6 {
			es = x.entries[tb.start:tb.end]
			break
		}
	}
	hi, lo := addrWords(q.Dst)
	var best *Route
	bestScore, bestBits := 0, 0
	for i := range es {
		e := &es[i]
		if best != nil && e.bits < bestBits {
			break
		}
		if hi&e.mhi != e.hi || lo&e.mlo != e.lo {
			continue
		}
		rt := e.rt
		oifMatch := true
		if !rt.Type.dropping() {
			if d := n.device(rt.Ifindex); d == nil || d.Down {
				continue
			}
			if q.Output && rt.Ifindex != q.Ifindex {
				if !v6 {
					continue
				}
				oifMatch = false
			}
		}
		// The device of an output lookup (IPv6), then lower metrics.
		score := 1
		if oifMatch {
			score = 2
		}
		if best == nil || score > bestScore || score == bestScore && rt.Metric < best.Metric {
			best, bestScore, bestBits = rt, score, e.bits
		}
	}
	return best
}
