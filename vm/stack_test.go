package vm

import (
	"errors"
	"testing"
)

// Checks allow the live stack only: from the bottom of FP's frame (its
// hidden slots included) to the top of the entry frame; all of it with FP
// unknown.
func TestLiveStack(t *testing.T) {
	const start, end = 0x10000, 0x10000 + MaxFrames*StackSize
	fp := uint64(end - 2*StackSize) // the third frame
	cases := []struct {
		name     string
		fp, addr uint64
		size     uint64
		ok       bool
	}{
		{"own frame's bottom", fp, fp - StackSize, 8, true},
		{"own frame's top", fp, fp - 8, 8, true},
		{"caller's frame", fp, fp + 8, 8, true},
		{"entry frame's top", fp, end - 1, 1, true},
		{"past the entry frame", fp, end - 4, 8, false},
		{"below the frame", fp, fp - StackSize - 8, 8, false},
		{"straddling the frame's bottom", fp, fp - StackSize - 4, 8, false},
		{"deepest frame, FP unknown", 0, start, 8, true},
		{"deepest frame", fp, start, 8, false},
		{"entry frame", end, end - StackSize, 8, true},
		{"entry frame, below", end, end - StackSize - 1, 1, false},
	}
	for _, tc := range cases {
		e := &Env{Checked: true, Stack: Region{Start: start, End: end, Writable: true}, FP: tc.fp}
		err := e.Check(tc.addr, tc.size, true)
		if got := err == nil; got != tc.ok || err != nil && !errors.Is(err, ErrMemory) {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
		ls := e.LiveStack()
		if got := ls.contains(tc.addr, tc.size); got != tc.ok {
			t.Errorf("%s: LiveStack %#x-%#x contains = %v, want %v", tc.name, ls.Start, ls.End, got, tc.ok)
		}
	}
}
