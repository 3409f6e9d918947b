//go:build !linux

package verifier_test

import (
	"errors"

	"github.com/cilium/ebpf"
)

// unprivilegedBPF reports whether unprivileged loads can be compared with
// the kernel: only on Linux.
func unprivilegedBPF() bool { return false }

func loadUnprivileged(*ebpf.ProgramSpec, ebpf.ProgramOptions) (*ebpf.Program, error) {
	return nil, errors.New("unprivileged loads need Linux")
}
