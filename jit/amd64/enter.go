//go:build amd64 && linux

package amd64

// enter runs native code on the execution context at ctx until it exits to
// Go (enter_amd64.s). ctx is off-heap memory.
//
//go:noescape
func enter(ctx uintptr)
