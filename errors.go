package bpfvm

import (
	"fmt"
	"strings"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// Errors returned by this package.
var (
	// ErrNotSupported is returned for program types, map types and features
	// bpfvm does not implement.
	ErrNotSupported = progtype.ErrNotSupported
	// ErrClosed is returned, wrapped, by every operation on a closed
	// program, map, collection or ring buffer reader. It also matches
	// os.ErrClosed and unix.EBADF, what cilium/ebpf returns for a closed
	// file descriptor.
	ErrClosed = maps.ErrClosed
	// ErrPermission is returned, wrapped, by a Go-side write to a frozen
	// or BPF_F_RDONLY map and a read of a BPF_F_WRONLY one, as the kernel's
	// EPERM. It also matches os.ErrPermission and unix.EPERM.
	ErrPermission = maps.ErrPermission
	// ErrBusy is returned, wrapped, by Map.Freeze during a Go-side write,
	// as the kernel's EBUSY; it also matches unix.EBUSY.
	ErrBusy = maps.ErrBusy
)

// VerifierError is a program the verifier rejected, with its log, like
// cilium/ebpf's.
type VerifierError struct {
	// Err wraps verifier.ErrRejected and names the instruction.
	Err error
	Log string
}

func (e *VerifierError) Error() string {
	msg := "load program: " + e.Err.Error()
	if hint := "(set ProgramOptions.NoVerify to run it unverified in checked mode)"; !strings.Contains(msg, "NoVerify") {
		msg += " " + hint
	}
	return msg
}

func (e *VerifierError) Unwrap() error { return e.Err }

func (e *VerifierError) String() string { return fmt.Sprintf("%v\n%s", e.Err, e.Log) }
