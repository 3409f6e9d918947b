package bpfvm

import (
	"fmt"
	"io"
	"slices"
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

// VerifierError is a program the verifier rejected, with its log, shaped
// like cilium/ebpf's: Error gives the same one-line summary (the log's last
// meaningful lines), %+v and %-v print the log, and errors.As also fills a
// *ebpf.VerifierError. A program the verifier cannot prove safe may still
// run unverified, in checked mode (ProgramOptions.NoVerify).
type VerifierError struct {
	// Cause is the verifier's error, wrapping verifier.ErrRejected (or,
	// for a malformed program, isa.ErrInvalidProgram): the rule the
	// program broke, in the kernel's words.
	Cause error
	// Log is the verifier log in lines, trailing white space trimmed, as
	// cilium/ebpf splits the kernel's. Unless ProgramOptions.LogDisabled
	// is set, a program rejected at LogLevel 0 is verified again for it,
	// as cilium/ebpf loads it again with LogLevelBranch.
	Log []string
	// Truncated says the log did not fit even the largest buffer (see
	// ProgramOptions.LogSize) and lost its end.
	Truncated bool
}

// newVerifierError splits a verifier log into a VerifierError's lines.
func newVerifierError(cause error, log string, truncated bool) *VerifierError {
	log = strings.Trim(log, "\t\r\v\n ")
	var lines []string
	if log != "" {
		lines = strings.Split(log, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, "\t\r\v\n ")
		}
	}
	return &VerifierError{Cause: cause, Log: lines, Truncated: truncated}
}

// Error is cilium/ebpf's summary: "load program", the cause, and the log's
// last line (with the one before it where that explains it: a register's
// state, the instruction of an invalid context access, a BTF member), the
// statistics line left out, and how many lines are not shown. The cause is
// left out where it is one of those lines, as bpfvm's cause is the
// kernel's message (cilium/ebpf's is the errno).
func (e *VerifierError) Error() string {
	var b strings.Builder
	b.WriteString("load program")
	log := e.Log
	if n := len(log); n > 0 && strings.HasPrefix(log[n-1], "processed ") {
		log = log[:n-1]
	}
	var lines []string
	if n := len(log); n > 0 {
		lines = log[n-1:]
		if n >= 2 && includePreviousLine(log[n-1]) {
			lines = log[n-2:]
		}
	}
	cause := ""
	if e.Cause != nil {
		cause = e.Cause.Error()
	}
	if cause != "" && !slices.ContainsFunc(lines, func(l string) bool { return strings.HasSuffix(cause, strings.TrimSpace(l)) }) {
		b.WriteString(": ")
		b.WriteString(cause)
	}
	for _, l := range lines {
		b.WriteString(": ")
		b.WriteString(strings.TrimSpace(l))
	}
	if omitted := len(e.Log) - len(lines); omitted > 0 && len(lines) > 0 {
		fmt.Fprintf(&b, " (%d line(s) omitted)", omitted)
	}
	return b.String()
}

// includePreviousLine reports whether a last log line is better understood
// with the line before it, by cilium/ebpf's rules.
func includePreviousLine(line string) bool {
	return strings.HasPrefix(line, "\t") ||
		len(line) >= 2 && line[0] == 'R' && line[1] >= '0' && line[1] <= '9' ||
		strings.HasPrefix(line, "invalid bpf_context access")
}

func (e *VerifierError) Unwrap() error { return e.Cause }

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
	// ErrInvalidType is a Go type that cannot stand for a variable in
	// VariablePointer (ebpf.ErrInvalidType).
	ErrInvalidType error = errs.New("invalid type", ebpf.ErrInvalidType)
)

// As makes errors.As fill a *ebpf.VerifierError from a bpfvm one, with
// the same Cause and Log, so that code reporting cilium/ebpf's verifier
// errors works unchanged.
func (e *VerifierError) As(target any) bool {
	t, ok := target.(**ebpf.VerifierError)
	if !ok {
		return false
	}
	*t = &ebpf.VerifierError{Cause: e.Cause, Log: e.Log}
	return true
}

// Format prints the error as cilium/ebpf's VerifierError does: %s and %v
// give Error(); %+v adds the log's first lines and %-v its last, one per
// line indented by a tab, as many as the width says (all without one),
// and how many were left out.
func (e *VerifierError) Format(f fmt.State, verb rune) {
	switch verb {
	case 's':
		io.WriteString(f, e.Error())
		return
	case 'v':
	default:
		fmt.Fprintf(f, "%%!%c(BADVERB)", verb)
		return
	}
	first, last := f.Flag('+'), f.Flag('-')
	n, haveWidth := f.Width()
	if !first && !last {
		if haveWidth {
			io.WriteString(f, "%!v(BADWIDTH)")
			return
		}
		io.WriteString(f, e.Error())
		return
	}
	if first && last {
		io.WriteString(f, "%!v(BADFLAG)")
		return
	}
	lines := e.Log
	if !haveWidth || n > len(lines) {
		n = len(lines)
	}
	omitted := len(lines) - n
	io.WriteString(f, "load program")
	if e.Cause != nil {
		fmt.Fprintf(f, ": %v", e.Cause)
	}
	io.WriteString(f, ":")
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
