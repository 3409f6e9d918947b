//go:build unix && !linux

package vm

// mapPopulate is zero where mmap has no MAP_POPULATE: pages fault in.
const mapPopulate = 0
