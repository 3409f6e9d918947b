package maps

// A red-black tree over bpf_rb_root and bpf_rb_node, with the kernel's
// layout (see graph.go) and rebalancing: insertion and erasure take the
// same rotations and colours as the kernel's lib/rbtree.c, so that the
// shape programs see through bpf_rbtree_root, _left and _right is the
// kernel's for the same operations.

// Offsets in rbtree roots and nodes.
const (
	rbRootNode     = 0
	rbRootLeftmost = 8
	rbParent       = 0 // parent | colour
	rbRight        = 8
	rbLeft         = 16
	rbOwner        = 24
)

const rbBlack = 1

func rbParentOf(n uint64) uint64 { return *gword(n + rbParent) &^ 3 }
func rbIsBlack(n uint64) bool    { return n == 0 || *gword(n + rbParent)&rbBlack != 0 }
func rbSetParent(n, p uint64)    { *gword(n + rbParent) = p | *gword(n + rbParent)&3 }
func rbSetBlack(n uint64)        { *gword(n + rbParent) |= rbBlack }
func rbSetRed(n uint64)          { *gword(n + rbParent) &^= rbBlack }
func rbSetColor(n uint64, black bool) {
	if black {
		rbSetBlack(n)
	} else {
		rbSetRed(n)
	}
}
func rbLeftOf(n uint64) uint64  { return *gword(n + rbLeft) }
func rbRightOf(n uint64) uint64 { return *gword(n + rbRight) }

// rbReplaceChild makes child take old's place under parent (or as the
// root).
func rbReplaceChild(root, parent, old, child uint64) {
	switch {
	case parent == 0:
		*gword(root + rbRootNode) = child
	case rbLeftOf(parent) == old:
		*gword(parent + rbLeft) = child
	default:
		*gword(parent + rbRight) = child
	}
}

// rbRotateLeft rotates x down to the left: its right child takes its
// place.
func rbRotateLeft(root, x uint64) {
	y := rbRightOf(x)
	*gword(x + rbRight) = rbLeftOf(y)
	if c := rbLeftOf(y); c != 0 {
		rbSetParent(c, x)
	}
	p := rbParentOf(x)
	rbSetParent(y, p)
	rbReplaceChild(root, p, x, y)
	*gword(y + rbLeft) = x
	rbSetParent(x, y)
}

// rbRotateRight rotates x down to the right.
func rbRotateRight(root, x uint64) {
	y := rbLeftOf(x)
	*gword(x + rbLeft) = rbRightOf(y)
	if c := rbRightOf(y); c != 0 {
		rbSetParent(c, x)
	}
	p := rbParentOf(x)
	rbSetParent(y, p)
	rbReplaceChild(root, p, x, y)
	*gword(y + rbRight) = x
	rbSetParent(x, y)
}

// RBLess compares two nodes for RBAdd: the program's less callback.
type RBLess func(a, b uint64) (bool, error)

// RBAdd inserts the node at node (at nodeOff in its object) into the tree
// at root, ordered by less (bpf_rbtree_add_impl): 0, or -EINVAL and the
// object's reference dropped when the node is in a tree already. An error
// of less stops the insertion before the tree changes.
func RBAdd(root, node, nodeOff uint64, less RBLess) (int64, error) {
	if *gword(node + rbOwner) != 0 {
		DropAlloc(node - nodeOff)
		return -22, nil
	}
	parent, link, leftmost := uint64(0), root+rbRootNode, true
	for cur := *gword(link); cur != 0; cur = *gword(link) {
		parent = cur
		l, err := less(node, cur)
		if err != nil {
			return 0, err
		}
		if l {
			link = cur + rbLeft
		} else {
			link = cur + rbRight
			leftmost = false
		}
	}
	*gword(node + rbParent) = parent // red
	*gword(node + rbLeft), *gword(node + rbRight) = 0, 0
	*gword(link) = node
	if leftmost {
		*gword(root + rbRootLeftmost) = node
	}
	rbInsertFixup(root, node)
	*gword(node + rbOwner) = root
	return 0, nil
}

// rbInsertFixup restores the colours after inserting the red node z.
func rbInsertFixup(root, z uint64) {
	for {
		p := rbParentOf(z)
		if p == 0 {
			rbSetBlack(z)
			return
		}
		if rbIsBlack(p) {
			return
		}
		g := rbParentOf(p)
		if p == rbLeftOf(g) {
			u := rbRightOf(g)
			if !rbIsBlack(u) {
				rbSetBlack(p)
				rbSetBlack(u)
				rbSetRed(g)
				z = g
				continue
			}
			if z == rbRightOf(p) {
				rbRotateLeft(root, p)
				z, p = p, z
			}
			rbRotateRight(root, g)
			rbSetBlack(p)
			rbSetRed(g)
			return
		}
		u := rbLeftOf(g)
		if !rbIsBlack(u) {
			rbSetBlack(p)
			rbSetBlack(u)
			rbSetRed(g)
			z = g
			continue
		}
		if z == rbLeftOf(p) {
			rbRotateRight(root, p)
			z, p = p, z
		}
		rbRotateLeft(root, g)
		rbSetBlack(p)
		rbSetRed(g)
		return
	}
}

// rbNext is the node after n in order, 0 for the last.
func rbNext(n uint64) uint64 {
	if r := rbRightOf(n); r != 0 {
		for n = r; rbLeftOf(n) != 0; n = rbLeftOf(n) {
		}
		return n
	}
	for p := rbParentOf(n); p != 0; n, p = p, rbParentOf(p) {
		if rbLeftOf(p) == n {
			return p
		}
	}
	return 0
}

// RBRemove takes the node at node out of the tree at root and returns it
// (bpf_rbtree_remove), 0 when the node is not in that tree.
func RBRemove(root, node uint64) uint64 {
	if *gword(node + rbOwner) != root {
		return 0
	}
	if *gword(root + rbRootLeftmost) == node {
		*gword(root + rbRootLeftmost) = rbNext(node)
	}
	rbErase(root, node)
	// RB_CLEAR_NODE: a node out of a tree is its own parent.
	*gword(node + rbParent) = node
	*gword(node + rbLeft), *gword(node + rbRight), *gword(node + rbOwner) = 0, 0, 0
	return node
}

// rbErase unlinks z and rebalances.
func rbErase(root, z uint64) {
	var x, xParent uint64
	removedBlack := rbIsBlack(z)
	switch {
	case rbLeftOf(z) == 0 || rbRightOf(z) == 0:
		x = rbLeftOf(z)
		if x == 0 {
			x = rbRightOf(z)
		}
		xParent = rbParentOf(z)
		if x != 0 {
			rbSetParent(x, xParent)
		}
		rbReplaceChild(root, xParent, z, x)
	default:
		y := rbRightOf(z)
		for rbLeftOf(y) != 0 {
			y = rbLeftOf(y)
		}
		removedBlack = rbIsBlack(y)
		x = rbRightOf(y)
		if rbParentOf(y) == z {
			xParent = y
		} else {
			xParent = rbParentOf(y)
			*gword(xParent + rbLeft) = x
			if x != 0 {
				rbSetParent(x, xParent)
			}
			*gword(y + rbRight) = rbRightOf(z)
			rbSetParent(rbRightOf(z), y)
		}
		*gword(y + rbLeft) = rbLeftOf(z)
		rbSetParent(rbLeftOf(z), y)
		p := rbParentOf(z)
		rbReplaceChild(root, p, z, y)
		*gword(y + rbParent) = *gword(z + rbParent) // z's parent and colour
	}
	if removedBlack {
		rbEraseFixup(root, x, xParent)
	}
}

// rbEraseFixup restores the black heights below parent, whose child x
// (perhaps 0) lost a black.
func rbEraseFixup(root, x, parent uint64) {
	for x != *gword(root + rbRootNode) && rbIsBlack(x) {
		if x == rbLeftOf(parent) {
			w := rbRightOf(parent)
			if !rbIsBlack(w) {
				rbSetBlack(w)
				rbSetRed(parent)
				rbRotateLeft(root, parent)
				w = rbRightOf(parent)
			}
			if rbIsBlack(rbLeftOf(w)) && rbIsBlack(rbRightOf(w)) {
				rbSetRed(w)
				x, parent = parent, rbParentOf(parent)
				continue
			}
			if rbIsBlack(rbRightOf(w)) {
				rbSetBlack(rbLeftOf(w))
				rbSetRed(w)
				rbRotateRight(root, w)
				w = rbRightOf(parent)
			}
			rbSetColor(w, rbIsBlack(parent))
			rbSetBlack(parent)
			rbSetBlack(rbRightOf(w))
			rbRotateLeft(root, parent)
			x = *gword(root + rbRootNode)
			break
		}
		w := rbLeftOf(parent)
		if !rbIsBlack(w) {
			rbSetBlack(w)
			rbSetRed(parent)
			rbRotateRight(root, parent)
			w = rbLeftOf(parent)
		}
		if rbIsBlack(rbLeftOf(w)) && rbIsBlack(rbRightOf(w)) {
			rbSetRed(w)
			x, parent = parent, rbParentOf(parent)
			continue
		}
		if rbIsBlack(rbLeftOf(w)) {
			rbSetBlack(rbRightOf(w))
			rbSetRed(w)
			rbRotateLeft(root, w)
			w = rbLeftOf(parent)
		}
		rbSetColor(w, rbIsBlack(parent))
		rbSetBlack(parent)
		rbSetBlack(rbLeftOf(w))
		rbRotateRight(root, parent)
		x = *gword(root + rbRootNode)
		break
	}
	if x != 0 {
		rbSetBlack(x)
	}
}

// RBFirst returns the leftmost node of the tree at root (bpf_rbtree_first),
// RBRootNode its root node (bpf_rbtree_root), 0 for an empty tree.
func RBFirst(root uint64) uint64    { return *gword(root + rbRootLeftmost) }
func RBRootNode(root uint64) uint64 { return *gword(root + rbRootNode) }

// RBChild returns the left or right child of node in the tree at root
// (bpf_rbtree_left, _right), 0 when it has none or node is not in that
// tree.
func RBChild(root, node uint64, right bool) uint64 {
	if *gword(node + rbOwner) != root {
		return 0
	}
	if right {
		return rbRightOf(node)
	}
	return rbLeftOf(node)
}

// freeRBTree takes every node out of the tree at root, holding lock (when
// the value has one), and then drops their objects (bpf_rb_root_free).
func freeRBTree(root uint64, nodeOff uint32, lock *uint32) {
	if lock != nil {
		LockSpin(lock)
	}
	var nodes []uint64
	var walk func(n uint64)
	walk = func(n uint64) {
		if n == 0 {
			return
		}
		walk(rbLeftOf(n))
		walk(rbRightOf(n))
		nodes = append(nodes, n)
	}
	walk(*gword(root + rbRootNode))
	*gword(root + rbRootNode), *gword(root + rbRootLeftmost) = 0, 0
	if lock != nil {
		UnlockSpin(lock)
	}
	for _, n := range nodes {
		*gword(n + rbOwner) = 0
		DropAlloc(n - uint64(nodeOff))
	}
}
