//go:build linux

package maps

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm/vm"
)

// doubleMap maps the same size bytes of a memory file at addr and at
// addr+size, over the block vm.Alloc reserved (whose Free unmaps both).
func doubleMap(addr, size uint64) error {
	fd, err := unix.MemfdCreate("bpfvm-ringbuf", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("ring buffer memory: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fmt.Errorf("ring buffer memory: %w", err)
	}
	for _, at := range []uint64{addr, addr + size} {
		_, err := unix.MmapPtr(fd, 0, vm.Ptr(at), uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED)
		if err != nil {
			return fmt.Errorf("ring buffer mapping: %w", err)
		}
	}
	return nil
}
