package bpfvm

import (
	"fmt"
	"io"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/internal/errs"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
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
	// ErrInvalidNet is returned, wrapped, by a run given a host world
	// (RunOptions.Net) that does not hold together: a device given twice,
	// a route or neighbour on a device that is not there, a socket of no
	// known protocol or namespace (Net.Validate).
	ErrInvalidNet = runner.ErrInvalidNet
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

// Errors of map operations. Every sentinel of this package also matches,
// with errors.Is, cilium/ebpf's sentinel for the same failure (where it has
// one) and the errno the kernel returns, so that error checks written
// against cilium/ebpf hold unchanged: errors.Is(err, ebpf.ErrKeyNotExist),
// errors.Is(err, unix.ENOENT) and errors.Is(err, bpfvm.ErrKeyNotExist) are
// all true for a lookup of a missing key.
var (
	// ErrKeyNotExist is a key a map lacks, and the end of NextKey (ENOENT,
	// ebpf.ErrKeyNotExist).
	ErrKeyNotExist = maps.ErrKeyNotExist
	// ErrKeyExist is an UpdateNoExist of a key already there (EEXIST,
	// ebpf.ErrKeyExist).
	ErrKeyExist = maps.ErrKeyExist
	// ErrIterationAborted is an iteration that cannot finish because keys
	// keep changing (ebpf.ErrIterationAborted).
	ErrIterationAborted error = errs.New("iteration aborted", ebpf.ErrIterationAborted)
	// ErrMapIncompatible is a map given in CollectionOptions.MapReplacements
	// whose type, sizes, max entries or flags differ from its spec's
	// (ebpf.ErrMapIncompatible).
	ErrMapIncompatible error = errs.New("map spec is incompatible with existing map", ebpf.ErrMapIncompatible)
	// ErrReadOnly is a write through a read-only Memory or Variable
	// (ebpf.ErrReadOnly): a frozen or BPF_F_RDONLY_PROG map, .rodata.
	ErrReadOnly error = errs.New("resource is read-only", ebpf.ErrReadOnly)
)

// As makes errors.As fill a *ebpf.VerifierError from a bpfvm one, with the
// log split into lines and Cause the verifier's error, so that code
// reporting cilium/ebpf's verifier errors works unchanged.
func (e *VerifierError) As(target any) bool {
	t, ok := target.(**ebpf.VerifierError)
	if !ok {
		return false
	}
	*t = &ebpf.VerifierError{Cause: e.Err, Log: e.logLines()}
	return true
}

// logLines returns the verifier log in lines, without the trailing newline.
func (e *VerifierError) logLines() []string {
	log := strings.TrimRight(e.Log, "\n")
	if log == "" {
		return nil
	}
	return strings.Split(log, "\n")
}

// Format prints the error as cilium/ebpf's VerifierError does: %s and %v
// give Error(); %+v adds the log's first lines and %-v its last, one per
// line indented by a tab, as many as the width says (all without one),
// and how many were left out.
func (e *VerifierError) Format(f fmt.State, verb rune) {
	if verb != 'v' && verb != 's' {
		fmt.Fprintf(f, "%%!%c(BADVERB)", verb)
		return
	}
	first, last := f.Flag('+'), f.Flag('-')
	if verb == 's' || !first && !last {
		io.WriteString(f, e.Error())
		return
	}
	if first && last {
		io.WriteString(f, "%!v(BADFLAG)")
		return
	}
	lines := e.logLines()
	n, ok := f.Width()
	if !ok || n > len(lines) {
		n = len(lines)
	}
	omitted := len(lines) - n
	fmt.Fprintf(f, "%s:", e.Error())
	if last {
		lines = lines[len(lines)-n:]
		if omitted > 0 {
			fmt.Fprintf(f, "\n\t(%d line(s) omitted)", omitted)
		}
	} else {
		lines = lines[:n]
	}
	for _, l := range lines {
		fmt.Fprintf(f, "\n\t%s", l)
	}
	if first && omitted > 0 {
		fmt.Fprintf(f, "\n\t(%d line(s) omitted)", omitted)
	}
}
