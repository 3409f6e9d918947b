//go:build unix

package runner

import (
	"os"
	"syscall"
)

// hostPidNS is the device and inode of the process's pid namespace, or
// zeros where the system has none to stat.
func hostPidNS() (dev, ino uint64) {
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		return 0, 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Dev), uint64(st.Ino)
}
