package vm

import "fmt"

// Thrown is the error bpf_throw stops a run with: it unwinds every frame
// of the engines (as any helper error does), and the runner that started
// the run catches it, releases what the run holds and runs the program's
// exception callback with Cookie, whose result becomes the run's (see
// DESIGN.md, "Exceptions").
type Thrown struct {
	Cookie uint64
}

func (t *Thrown) Error() string { return fmt.Sprintf("bpf_throw(%#x) not caught", t.Cookie) }
