package runner

import "slices"

// The host's cgroups, as the cgroup helpers see them: the cgroup v2
// hierarchy (Net.Cgroups), the cgroup of the task a program runs in
// (Net.Cgroup) and the cgroup it runs attached to (Net.AttachCgroup).
// bpfvm has no cgroups of its own: a cgroup array's slots and a cgroup
// storage's keys hold ids of this hierarchy. The zero Net is a hierarchy
// of the root cgroup alone, every task and socket in it.

// RootCgroup is the id of the root cgroup of cgroup v2.
const RootCgroup = 1

// Cgroup is a cgroup of the host's hierarchy.
type Cgroup struct {
	// ID is the cgroup's id (the kernel's cgroup_id, the inode number of
	// its directory), not 0 or RootCgroup.
	ID uint64
	// Parent is its parent's id; 0 is the root cgroup.
	Parent uint64
}

// UnderCgroup reports whether the cgroup with id cg is the cgroup
// ancestor or one of its descendants (the kernel's
// cgroup_is_descendant); a cgroup the hierarchy does not list is a child
// of the root. Id 0 is the root cgroup.
func (n *Net) UnderCgroup(cg, ancestor uint64) bool {
	if cg == 0 {
		cg = RootCgroup
	}
	if ancestor == 0 {
		ancestor = RootCgroup
	}
	// At most one step per listed cgroup: a cycle in the host's list
	// ends the walk.
	for range len(n.Cgroups) + 2 {
		if cg == ancestor {
			return true
		}
		if cg == RootCgroup {
			return false
		}
		cg = n.parent(cg)
	}
	return false
}

// parent is the id of the parent of cgroup cg.
func (n *Net) parent(cg uint64) uint64 {
	for _, c := range n.Cgroups {
		if c.ID == cg && c.Parent != 0 {
			return c.Parent
		}
	}
	return RootCgroup
}

// TaskCgroup is the id of the cgroup of the task the run is in.
func (r *Runner) TaskCgroup() uint64 {
	if c := r.Net().Cgroup; c != 0 {
		return c
	}
	return RootCgroup
}

// AttachCgroup is the id of the cgroup the program runs attached to and
// its attach type: the key of the storage bpf_get_local_storage gives.
func (r *Runner) AttachCgroup() (cgroup uint64, attach uint32) {
	cgroup = r.Net().AttachCgroup
	if cgroup == 0 {
		cgroup = RootCgroup
	}
	return cgroup, uint32(r.prog.Type.Attach)
}

// SocketAt returns the cookie of the socket a program's socket pointer
// (PTR_TO_SOCKET, PTR_TO_SOCK_COMMON) points at, ok false for an address
// that is no socket of the run: the run's own socket (the context's sk)
// or a socket of the table (Net.Sockets) a lookup returned.
func (r *Runner) SocketAt(addr uint64) (cookie uint64, ok bool) {
	ref, ok := r.Sock(addr)
	if !ok {
		return 0, false
	}
	return r.SockCookie(ref), true
}

// ContextIsSocket reports whether the program's context is its socket
// (cgroup_sock's struct bpf_sock), whose cookie is SocketCookie.
func (r *Runner) ContextIsSocket() bool {
	return r.prog != nil && slices.Contains(r.prog.Type.ContextNames, "bpf_sock")
}
