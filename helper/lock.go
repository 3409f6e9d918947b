package helper

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// ErrLock is a run's misuse of bpf_spin_lock that the verifier rules out:
// a second lock while holding one, which would wait for itself, or the
// release of a lock the run does not hold.
var ErrLock = errors.New("bpf_spin_lock misused")

// lockHelpers take and release the bpf_spin_lock of a map value.
var lockHelpers = []Helper{
	{Proto: Proto{Name: "bpf_spin_lock", Args: [5]ArgType{ArgSpinLock}, Ret: RetVoid}, Func: helperSpinLock},
	{Proto: Proto{Name: "bpf_spin_unlock", Args: [5]ArgType{ArgSpinLock}, Ret: RetVoid}, Func: helperSpinUnlock},
}

// helperSpinLock is bpf_spin_lock(lock): it waits for the lock and takes
// it. The verifier proves lock the bpf_spin_lock of a map value and that
// the program takes no other lock before releasing it; a run that ends
// holding it (unverified) releases it.
func helperSpinLock(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	p, err := lockWord(e, r1)
	if err != nil {
		return 0, err
	}
	if !runner.Of(e).HoldLock(r1) {
		return 0, fmt.Errorf("%w: bpf_spin_lock at %#x while the run holds a lock", ErrLock, r1)
	}
	maps.LockSpin(p)
	return 0, nil
}

// helperSpinUnlock is bpf_spin_unlock(lock).
func helperSpinUnlock(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	p, err := lockWord(e, r1)
	if err != nil {
		return 0, err
	}
	if !runner.Of(e).DropLock(r1) {
		return 0, fmt.Errorf("%w: bpf_spin_unlock at %#x of a lock the run does not hold", ErrLock, r1)
	}
	maps.UnlockSpin(p)
	return 0, nil
}

// lockWord is the 4-byte lock at addr, which the run may write.
func lockWord(e *vm.Env, addr uint64) (*uint32, error) {
	if addr%4 != 0 {
		return nil, fmt.Errorf("%w: bpf_spin_lock at %#x is misaligned", vm.ErrMemory, addr)
	}
	b, err := e.Bytes(addr, 4, true)
	if err != nil {
		return nil, err
	}
	return (*uint32)(unsafe.Pointer(&b[0])), nil
}
