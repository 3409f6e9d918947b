//go:build amd64 && linux

package amd64

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

const protNone = unix.PROT_NONE

func mprotect(b []byte, prot int) error { return unix.Mprotect(b, prot) }

// mapCode copies machine code into fresh pages and makes them read-execute:
// the pages are never writable and executable at once (W^X).
func mapCode(code []byte) ([]byte, error) {
	page := unix.Getpagesize()
	size := (len(code) + page - 1) &^ (page - 1)
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("jit: mmap %d bytes: %w", size, err)
	}
	copy(b, code)
	if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		unix.Munmap(b)
		return nil, fmt.Errorf("jit: mprotect: %w", err)
	}
	return b, nil
}

func unmapCode(b []byte) error { return unix.Munmap(b) }

func codeAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// membarrier(2) commands.
const (
	membarrierQuery                    = 0
	membarrierGlobal                   = 1
	membarrierPrivateExpedited         = 8
	membarrierRegisterPrivateExpedited = 16
)

var barrier struct {
	once sync.Once
	cmd  uintptr
}

// processBarrier makes every thread of the process execute a full memory
// barrier (membarrier(2)). Close uses it so that runs can mark the program
// they run with plain stores. It reports false if the kernel cannot do it.
func processBarrier() bool {
	barrier.once.Do(func() {
		mask, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierQuery, 0, 0)
		if e != 0 {
			return
		}
		if mask&membarrierPrivateExpedited != 0 {
			if _, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierRegisterPrivateExpedited, 0, 0); e == 0 {
				barrier.cmd = membarrierPrivateExpedited
				return
			}
		}
		if mask&membarrierGlobal != 0 {
			barrier.cmd = membarrierGlobal
		}
	})
	if barrier.cmd == 0 {
		return false
	}
	_, _, e := unix.Syscall(unix.SYS_MEMBARRIER, barrier.cmd, 0, 0)
	return e == 0
}
