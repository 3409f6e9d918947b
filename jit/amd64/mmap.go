//go:build amd64 && linux

package amd64

import (
	"sync"

	"golang.org/x/sys/unix"
)

const protNone = unix.PROT_NONE

func mprotect(b []byte, prot int) error { return unix.Mprotect(b, prot) }

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
