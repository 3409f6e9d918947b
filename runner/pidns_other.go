//go:build !unix

package runner

// hostPidNS is zeros: the system has no pid namespaces.
func hostPidNS() (dev, ino uint64) { return 0, 0 }
