//go:build windows

package helper

// clockMonotonic starts bpf_ktime_get_ns at 0 where there is no
// clock_gettime: programs use its differences.
func clockMonotonic() uint64 { return 0 }
