// Package mapref lets bpfvm's reader packages (perf, ringbuf) reach the
// maps.Map behind a *bpfvm.Map without widening the root package's API.
package mapref

import "bpfvm/maps"

// Of returns the map behind m, a *bpfvm.Map, with a reference the caller
// drops with Release; an error wrapping maps.ErrClosed once m is closed.
// Package bpfvm sets it at init, before any importer of this package runs.
var Of func(m any) (maps.Map, error)
