package maps

import (
	"testing"
)

// TestListAndTree runs the list and rbtree operations on objects of a
// type with a list node and one with an rbtree node: order, owners,
// the second push of a node, removal of a node of another tree, and the
// red-black invariants after every change.
func TestListAndTree(t *testing.T) {
	base := LiveObjects()
	lt := RegisterObjType(32, []Field{{Kind: ListNode, Offset: 8, Size: 24}})
	head := newSlot(kobj{kind: ObjCgroup, refs: 1}, 16)
	var nodes []uint64
	for i := range 5 {
		o := NewAlloc(lt)
		if o == 0 {
			t.Fatal("allocation failed")
		}
		*gword(o) = uint64(i)
		if r := ListPush(head, o+8, 8, i%2 == 0); r != 0 {
			t.Fatalf("push %d: %d", i, r)
		}
		nodes = append(nodes, o)
	}
	// 3 1 0 2 4
	var got []uint64
	for n := ListPop(head, false); n != 0; n = ListPop(head, false) {
		got = append(got, *gword(n - 8))
		DropAlloc(n - 8)
	}
	if want := []uint64{3, 1, 0, 2, 4}; len(got) != 5 || got[0] != want[0] || got[4] != want[4] || got[2] != want[2] {
		t.Errorf("list order %v, want %v", got, want)
	}

	rt := RegisterObjType(40, []Field{{Kind: RBNode, Offset: 8, Size: 32}})
	root := newSlot(kobj{kind: ObjCgroup, refs: 1}, 16)
	less := func(a, b uint64) (bool, error) { return *gword(a - 8) < *gword(b - 8), nil }
	x := uint64(7)
	for i := range 200 {
		x = x*6364136223846793005 + 1442695040888963407
		o := NewAlloc(rt)
		*gword(o) = x >> 40
		if r, _ := RBAdd(root, o+8, 8, less); r != 0 {
			t.Fatalf("add %d: %d", i, r)
		}
		if !AcquireAlloc(o) {
			t.Fatal("AcquireAlloc failed")
		}
		// The failed add drops the reference it was given.
		if r, _ := RBAdd(root, o+8, 8, less); r != -22 {
			t.Fatalf("second add %d: %d", i, r)
		}
		checkRB(t, root)
	}
	prev := uint64(0)
	for i := range 200 {
		var n uint64
		if i%3 == 0 {
			n = RBRootNode(root)
		} else {
			n = RBFirst(root)
		}
		if RBRemove(root, n) != n {
			t.Fatalf("remove %d failed", i)
		}
		if RBRemove(root, n) != 0 {
			t.Fatalf("removed %d twice", i)
		}
		if i%3 != 0 {
			if k := *gword(n - 8); k < prev {
				t.Fatalf("first %d after %d", k, prev)
			}
			prev = *gword(n - 8)
		}
		DropAlloc(n - 8)
		checkRB(t, root)
	}
	PutObject(head)
	PutObject(root)
	for range 100 {
		if Reclaim() == 0 && LiveObjects() == base {
			break
		}
	}
	if n := LiveObjects(); n != base {
		t.Errorf("%d objects alive, want %d", n, base)
	}
}

// checkRB checks the red-black invariants of the tree at root: no red
// node with a red child, the same black height on every path, parents
// linked back, the leftmost node cached.
func checkRB(t *testing.T, root uint64) {
	t.Helper()
	var walk func(n, parent uint64) int
	walk = func(n, parent uint64) int {
		if n == 0 {
			return 1
		}
		if rbParentOf(n) != parent {
			t.Fatalf("node %#x: parent %#x, want %#x", n, rbParentOf(n), parent)
		}
		if !rbIsBlack(n) && (!rbIsBlack(rbLeftOf(n)) || !rbIsBlack(rbRightOf(n))) {
			t.Fatalf("red node %#x with a red child", n)
		}
		l, r := walk(rbLeftOf(n), n), walk(rbRightOf(n), n)
		if l != r {
			t.Fatalf("node %#x: black heights %d and %d", n, l, r)
		}
		if rbIsBlack(n) {
			l++
		}
		return l
	}
	top := RBRootNode(root)
	if top != 0 && !rbIsBlack(top) {
		t.Fatal("red root")
	}
	walk(top, 0)
	first := top
	for first != 0 && rbLeftOf(first) != 0 {
		first = rbLeftOf(first)
	}
	if RBFirst(root) != first {
		t.Fatalf("leftmost %#x, want %#x", RBFirst(root), first)
	}
}

func BenchmarkAllocDrop(b *testing.B) {
	lt := RegisterObjType(32, []Field{{Kind: ListNode, Offset: 8, Size: 24}})
	for b.Loop() {
		DropAlloc(NewAlloc(lt))
	}
}
