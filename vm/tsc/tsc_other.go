//go:build !amd64

package tsc

import "time"

const native = false

// base anchors Now's monotonic readings.
var base = time.Now()

// Now returns nanoseconds of Go's monotonic clock (plus one, so it is never
// zero).
func Now() uint64 { return uint64(time.Since(base)) + 1 }
