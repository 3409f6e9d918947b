//go:build windows

package vm

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// mapMemory reserves and commits size bytes (whole pages) of zeroed
// read-write memory.
func mapMemory(size int) ([]byte, error) {
	addr, err := windows.VirtualAlloc(0, uintptr(size), windows.MEM_RESERVE|windows.MEM_COMMIT, windows.PAGE_READWRITE)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(Ptr(uint64(addr))), size), nil
}

// unmapMemory releases what mapMemory mapped.
func unmapMemory(b []byte) error {
	return windows.VirtualFree(uintptr(unsafe.Pointer(&b[0])), 0, windows.MEM_RELEASE)
}

// reserveMemory is mapMemory: Windows commits what it maps.
func reserveMemory(size int) ([]byte, error) { return mapMemory(size) }
