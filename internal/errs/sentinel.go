// Package errs builds bpfvm's sentinel errors so that they also match
// what cilium/ebpf, the os package and the kernel give for the same failure:
// code written against cilium/ebpf keeps its errors.Is checks (against
// ebpf.ErrKeyNotExist, os.ErrClosed or unix.ENOENT) when it switches to
// bpfvm, and bpfvm's own sentinels still match by identity.
package errs

import "slices"

// Error is a sentinel error that matches other errors as well.
type Error struct {
	msg  string
	also []error
}

// New returns a sentinel with message msg that errors.Is also matches
// against each of also: cilium/ebpf's sentinel, a syscall.Errno (which
// unix.Errno is on Linux), an os sentinel.
func New(msg string, also ...error) *Error {
	return &Error{msg: msg, also: also}
}

// Error returns the message.
func (e *Error) Error() string { return e.msg }

// Is reports whether target is one of the errors e also stands for.
func (e *Error) Is(target error) bool { return slices.Contains(e.also, target) }
