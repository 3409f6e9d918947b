package vm

// The hidden part of a frame: 40 bytes below the 512 a program may address
// (the verifier rejects any access there), where the rewrite keeps the
// frame's may_goto state, as the kernel keeps it in stack it adds to the
// frame (and an inlined bpf_loop its saved registers, LoopSave). The
// rewrite initialises both may_goto slots at the function's entry (count
// MayGotoRefill, start 0) and replaces may_goto with isa.OpMayGotoTimed,
// which both engines implement the same way:
//
//	count := *(fp + MayGotoCount)
//	if count == 0 { goto target }
//	count--
//	if count == 0 {
//		now := tsc.Now()
//		start := *(fp + MayGotoStart)
//		switch {
//		case start == 0: *(fp + MayGotoStart) = now; count = MayGotoRefill
//		case now-start < budget: count = MayGotoRefill
//		}
//	}
//	*(fp + MayGotoCount) = count
//
// So a loop gets MayGotoRefill rounds per look at the clock and ends once
// the time since its frame first used may_goto exceeds the budget: the
// kernel's timed may_goto. The first may_goto takes the start time, so a
// frame's number of rounds before the loop ends is k*MayGotoRefill, k >= 2.
const (
	ProgramStack = 512 // stack a program addresses below R10
	HiddenStack  = 40  // hidden slots below it, per frame

	// LoopSave is the offset from R10 of three slots where an inlined
	// bpf_loop keeps R6-R8 of the function (rewrite.InlineLoops).
	LoopSave = -ProgramStack - 40

	MayGotoCount = -ProgramStack - 8  // offset from R10 of the countdown
	MayGotoStart = -ProgramStack - 16 // offset from R10 of the start time (TSC ticks)

	// MayGotoRefill is the count between looks at the clock (the kernel's
	// BPF_MAX_TIMED_LOOPS).
	MayGotoRefill = 0xffff
)
