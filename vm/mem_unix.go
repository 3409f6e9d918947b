//go:build unix

package vm

import "golang.org/x/sys/unix"

// mapMemory maps size bytes (whole pages) of zeroed private memory.
func mapMemory(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
}

// unmapMemory unmaps what mapMemory mapped.
func unmapMemory(b []byte) error { return unix.Munmap(b) }
