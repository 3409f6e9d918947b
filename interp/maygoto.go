package interp

import (
	"time"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
	"github.com/bpfvm/bpfvm/vm/tsc"
)

// mayGotoBudget is a timed may_goto's budget (microseconds in the
// immediate) in clock ticks.
func mayGotoBudget(ins isa.Instruction) uint64 {
	return tsc.Ticks(time.Duration(ins.Imm) * time.Microsecond)
}

// mayGotoRefill is the slow path of a timed may_goto whose countdown ran
// out in the frame at fp: the first time it notes the start, later it
// refills the countdown while the frame is within its budget (ticks), and
// returns 0, which makes the next may_goto jump, once it is spent. See
// vm/maygoto.go; the JIT emits the same steps.
func mayGotoRefill(fp, budget uint64) uint64 {
	now := tsc.Now()
	sp := (*uint64)(vm.Ptr(fp - uint64(-vm.MayGotoStart)))
	switch start := *sp; {
	case start == 0:
		*sp = now
	case now-start >= budget:
		return 0
	}
	return vm.MayGotoRefill
}

// iterNumNext is bpf_iter_num_next on the iterator at it (the rewrite's
// isa.OpIterNumNext, in verified programs only): the next value's address,
// or 0 and an exhausted iterator at the end.
func iterNumNext(it uint64) uint64 {
	s := (*[2]int32)(vm.Ptr(it))
	if next := s[0] + 1; next < s[1] {
		s[0] = next
		return it
	}
	s[0], s[1] = 0, 0
	return 0
}
