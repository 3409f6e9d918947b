//go:build unix

package vm

import "golang.org/x/sys/unix"

// mapMemory maps size bytes (whole pages) of zeroed private memory, its
// pages populated up front when it is at most populateMax bytes.
func mapMemory(size int) ([]byte, error) {
	flags := unix.MAP_PRIVATE | unix.MAP_ANON
	if size <= populateMax {
		flags |= mapPopulate
	}
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
}

// unmapMemory unmaps what mapMemory mapped.
func unmapMemory(b []byte) error { return unix.Munmap(b) }

// reserveMemory maps size bytes of zeroed private memory without
// reserving swap for it: pages are there when first touched.
func reserveMemory(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
}
