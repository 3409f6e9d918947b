package verifier

import "slices"

// Precision across loop back-edges (the kernel's SCC back-edges and
// propagate_backedges). At the head of a callback or may_goto loop, a state
// covered by an ancestor whose exploration is not finished (a loop hit)
// ends its path; what the rest of the loop needs precise is whatever the
// ancestor ends up needing, which is not known yet. So the hit is
// remembered as a back-edge (the path's instruction history from the head
// on), and when the head's exploration finishes, its final marks are traced
// back along every back-edge, again until nothing changes, marking the
// states on the loop's way and, past the head, its ancestors.
//
// Until then, the states between the head and the hit have incomplete
// marks: they are "open" and compare every scalar, and a state they cover
// gets every scalar of its path marked precise, as does a loop hit against
// an open head. A head that is itself open (an inner loop) hands its
// back-edges to the outer heads when it finishes: its marks can still grow,
// so they are traced again when those finish, and the states on the way
// stay open until then.

// backedge is a path that ended in a loop hit.
type backedge struct {
	// equal is the state that covered the path: its marks are traced.
	// until is the loop head the path's way ends at: equal itself for a
	// loop hit, a head equal is open for otherwise (openHit).
	equal, until *explored
	// hist is the instruction history of the path from index base on;
	// the part before it is still in v.hist when the back-edge is traced
	// (base is the end of the finished head's own path).
	base int
	hist []histEntry
	// seg is the hit's own segment, parent the state it started from.
	seg    segment
	parent *explored
	// frame is the frame the hit happened in.
	frame int
	// counted marks a back-edge the kernel keeps a state copy for, which
	// peak_states counts (not those of callback rounds).
	counted bool
}

// loopHit handles a state covered by its ancestor e at a loop head.
func (v *verifier) loopHit(e *explored, pc int) {
	if v.opts.Unprivileged {
		return
	}
	if v.exact {
		// Compared exactly anyway: be conservative.
		v.markAllPrecise()
		return
	}
	// An open e (an inner loop's head on the way of an outer one's
	// back-edge) may still gain marks: its back-edges, this one too, go
	// to the outer heads when it finishes (closeLoop) and are traced
	// again with its final marks when they finish, as the kernel traces
	// every back-edge of an SCC at its exit.
	v.propagatePrecision(e.st, pc)
	v.addBackedge(e, e, !v.callbackSites[pc])
}

// addBackedge records the current path, covered by equal, as a back-edge
// of the loop head h, an ancestor, and opens the states on its way; counted
// says whether the kernel would keep a state copy for it.
func (v *verifier) addBackedge(equal, h *explored, counted bool) {
	bk := &backedge{
		equal:   equal,
		until:   h,
		base:    h.histEnd,
		hist:    slices.Clone(v.hist[h.histEnd:]),
		seg:     v.curSegment(),
		parent:  v.cur.parent,
		frame:   len(v.cur.Frames) - 1,
		counted: counted,
	}
	if counted {
		v.countBackedges(1)
	}
	h.backedges = append(h.backedges, bk)
	for s := bk.parent; s != h; s = s.parent {
		s.openLoop(h)
	}
}

// openHit handles a state covered by e whose marks are not final: e is
// open for loop heads still being explored, which are ancestors of the
// current state. The path gets e's marks now and, as a back-edge of each
// of those heads, again when they finish, as the kernel adds a back-edge
// to the loop's visit for a hit against a state with incomplete marks.
func (v *verifier) openHit(e *explored, pc int) {
	if v.opts.Unprivileged {
		return
	}
	for _, h := range e.openFor {
		if v.exact || !v.isAncestor(h) {
			v.markAllPrecise()
			return
		}
	}
	v.propagatePrecision(e.st, pc)
	for _, h := range e.openFor {
		v.addBackedge(e, h, true)
	}
}

// isAncestor reports whether h is remembered on the current path.
func (v *verifier) isAncestor(h *explored) bool {
	for s := v.cur.parent; s != nil; s = s.parent {
		if s == h {
			return true
		}
	}
	return false
}

// countBackedges accounts for n back-edges kept or (n < 0) dropped: the
// kernel keeps a state copy for each and counts it in peak_states.
func (v *verifier) countBackedges(n int) {
	v.states += n
	v.stats.PeakStates = max(v.stats.PeakStates, v.states)
}

// openLoop records that s is on the way of a back-edge of the head h.
func (s *explored) openLoop(h *explored) {
	if !slices.Contains(s.openFor, h) {
		s.openFor = append(s.openFor, h)
	}
}

// closeLoop traces the final marks of the loop head e, whose exploration
// just finished, along its back-edges until they add nothing, then closes
// the states on their way. v.hist still holds e's path.
func (v *verifier) closeLoop(e *explored) {
	for {
		before := v.marks
		for _, bk := range e.backedges {
			v.replay(bk)
		}
		if v.marks == before {
			break
		}
	}
	outer := e.openFor
	for _, bk := range e.backedges {
		for s := bk.parent; s != bk.until; s = s.parent {
			if len(s.openFor) == 0 {
				continue // closed already, on another back-edge's way
			}
			s.openFor = slices.DeleteFunc(s.openFor, func(h *explored) bool { return h == e })
			for _, h := range outer {
				s.openLoop(h)
			}
			if len(s.openFor) == 0 {
				s.doneAt = v.seen // closed: its paths' ways are walked
			}
			if len(s.openFor) == 0 && s.evicted && s.branches == 0 {
				// Finished, forgotten, and now closed.
				v.freeExplored(s)
			}
		}
		if bk.counted && len(outer) == 0 {
			v.countBackedges(-1)
		}
		for i, h := range outer {
			// Traced again when h finishes, from h's path: keep the
			// history between h and e (and the count, once).
			h.backedges = append(h.backedges, &backedge{
				counted: bk.counted && i == 0,
				equal:   bk.equal,
				until:   bk.until,
				base:    h.histEnd,
				hist:    append(slices.Clone(v.hist[h.histEnd:bk.base]), bk.hist...),
				seg:     bk.seg,
				parent:  bk.parent,
				frame:   bk.frame,
			})
		}
	}
	e.backedges = nil
}

// replay traces the precise scalars of the state that covered bk's path
// back along it.
func (v *verifier) replay(bk *backedge) {
	e := bk.equal
	b := precMasks(v, e.st, e.pc, bk.frame)
	if b.empty() {
		return
	}
	live := v.hist
	v.hist = append(v.hist[:bk.base:bk.base], bk.hist...)
	v.backtrackFrom(&b, bk.seg, bk.parent, nil)
	v.hist = live
}
