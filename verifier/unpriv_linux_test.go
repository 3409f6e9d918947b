package verifier_test

import (
	"os"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// unprivilegedBPF reports whether the kernel lets programs be loaded
// without CAP_BPF or CAP_SYS_ADMIN (kernel.unprivileged_bpf_disabled = 0).
// The tests never change the setting: it is the machine's.
func unprivilegedBPF() bool {
	b, err := os.ReadFile("/proc/sys/kernel/unprivileged_bpf_disabled")
	return err == nil && strings.TrimSpace(string(b)) == "0"
}

// loadUnprivileged loads a program from a thread whose effective
// capabilities are all dropped: the kernel verifies it as it would for an
// unprivileged user. Capabilities are per thread in Linux; the thread is
// never handed back to the Go runtime, which ends it with the goroutine.
func loadUnprivileged(spec *ebpf.ProgramSpec, opts ebpf.ProgramOptions) (*ebpf.Program, error) {
	type result struct {
		p   *ebpf.Program
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with us
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- result{err: err}
			return
		}
		data[0].Effective, data[1].Effective = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- result{err: err}
			return
		}
		p, err := ebpf.NewProgramWithOptions(spec, opts)
		done <- result{p, err}
	}()
	r := <-done
	return r.p, r.err
}
