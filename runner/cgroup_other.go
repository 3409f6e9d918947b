//go:build !linux

package runner

// hostCgroupID is 1, the root cgroup's id: only Linux has cgroups.
func hostCgroupID() uint64 { return 1 }
