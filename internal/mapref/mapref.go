// Package mapref lets bpfvm's reader packages (perf, ringbuf) reach the
// maps.Map behind a *bpfvm.Map. The accessor takes a Token, which only
// packages of this module can name, so the root's API gains nothing users
// can call, and no state is set at init.
package mapref

import (
	"fmt"

	"github.com/bpfvm/bpfvm/maps"
)

// Token is the argument of the accessor; only this module can make one.
type Token struct{}

// Backed is implemented by *bpfvm.Map.
type Backed interface {
	// Backing returns the map with a reference the caller drops with
	// Release; an error wrapping maps.ErrClosed once the map is closed.
	Backing(Token) (maps.Map, error)
}

// Of returns the map behind m, a *bpfvm.Map, with a reference the caller
// drops with Release; an error wrapping maps.ErrClosed once m is closed.
func Of(m Backed) (maps.Map, error) {
	if m == nil {
		return nil, fmt.Errorf("no map: %w", maps.ErrInvalid)
	}
	return m.Backing(Token{})
}
