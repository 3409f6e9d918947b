//go:build !unix

package benchscale

import "time"

// threadCPU is 0 where there is no thread CPU clock: CPU figures are 0.
func threadCPU() time.Duration { return 0 }
