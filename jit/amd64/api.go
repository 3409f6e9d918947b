package amd64

import "errors"

// Mode selects the memory modes whose machine code Compile generates before
// returning. A run in a mode that was not compiled compiles it on first use.
type Mode uint8

const (
	// Checked code validates every access against the run's regions.
	Checked Mode = 1 << iota
	// Unchecked code accesses memory directly: for verified programs.
	Unchecked
)

// Options control compilation.
type Options struct {
	// Modes to compile eagerly; zero means Checked.
	Modes Mode
}

// ErrClosed is returned by runs of a closed program.
var ErrClosed = errors.New("jit: program closed")

// ErrNotSupported is returned by Compile where there is no JIT (other
// architectures and operating systems).
var ErrNotSupported = errors.New("jit: not supported on this platform")
