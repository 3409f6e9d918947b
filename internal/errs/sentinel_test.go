package errs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

func TestIs(t *testing.T) {
	other := errors.New("other")
	e := New("busy", syscall.EBUSY, other)
	wrapped := fmt.Errorf("map m: freeze: %w", e)
	for _, tc := range []struct {
		target error
		want   bool
	}{
		{e, true},
		{syscall.EBUSY, true},
		{other, true},
		{syscall.EPERM, false},
		{os.ErrPermission, false},
		{New("busy", syscall.EBUSY), false}, // another sentinel, same message
	} {
		if got := errors.Is(wrapped, tc.target); got != tc.want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", wrapped, tc.target, got, tc.want)
		}
	}
	if e.Error() != "busy" {
		t.Errorf("message %q", e.Error())
	}
}
