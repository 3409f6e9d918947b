// Package amd64 compiles eBPF programs to x86-64 machine code and runs them
// from Go without cgo, with the interpreter's semantics (package interp):
// same results, same errors, same memory effects.
//
// # Code
//
// Compile translates every instruction slot to machine code in one linear
// image per memory mode (checked and unchecked) and budget kind (below),
// followed by out-of-line stubs and a few shared routines. A few idioms
// clang emits in loops become one machine instruction (fuse.go). Jump sizes converge over several passes:
// the first pass emits every jump in its rel32 form; each later pass picks
// rel8 wherever the previous pass's layout allows it. Sizes only shrink, so
// a short jump stays short, and once a pass reproduces the previous layout
// exactly its displacements are right. The image is then placed in
// executable memory (below): written while read-write, then made
// read-execute, never both (W^X), and returned to the pool by Close.
//
// # Native routines and far calls
//
// A few helpers have native routines (natives_amd64.s: vm.NativeCPU for
// bpf_get_smp_processor_id, vm.NativeRandom for bpf_get_prandom_u32 stepping
// the run's vm.Rand, vm.NativeZero for bpf_get_numa_node_id); Options.Natives
// says which helper ids they serve. JIT code CALLs them directly, without
// leaving native code: they live in the Go binary's text, take their state
// from the header in r12, return in rbx, clobber only rax and rdx, and
// never touch the goroutine. A call is a rel32 CALL when the image is in
// reach of the routine, otherwise movabs rax + CALL rax, or with
// Options.Retpoline a CALL to a retpoline thunk emitted once at the end of
// the image (seed 003). Since the address decides the form, the passes run
// first with every such call in its long indirect form at an unknown
// address; then the memory is allocated; in near memory the passes run
// again at the final address, where calls shrink to rel32 and jumps may
// shrink further, until the layout is stable again. The reach test covers
// the whole allocation, not the call site, so a call's form does not
// depend on the layout and the extra passes converge; should they not,
// the first layout, correct at any address, is used.
//
// # Executable memory
//
// A Memory pool (DefaultMemory unless Options.Memory) has two tiers. Near
// memory is one range reserved (PROT_NONE, no memory committed) at an
// address hint next to the binary's text, checked to be within rel32 reach
// of every native routine, and handed out page by page, first fit; pages
// are charged against NearLimit (like bpf_jit_limit), or the lower
// UnprivNearLimit for Options.Unprivileged. When the limit is reached or
// the range is full, the code goes to far memory (a fresh mapping
// anywhere, bounded by FarLimit), where native calls stay indirect. When
// that fails too, Compile returns ErrNoMemory and the caller runs the
// program on the interpreter. Info reports the tier, size and pages.
// Freed near pages are made inaccessible and released (MADV_DONTNEED) and
// their range returns to the pool.
//
// # Constant blinding
//
// With Options.Blind every immediate the program chose (ALU and jump
// operands, stores, LD_IMM64, LD_ABS/LD_IND offsets, division constants)
// is emitted as imm^k with a fresh random k and undone at run time in rax
// or rdx (or the destination of a move), as the kernel's
// bpf_jit_blind_constants does with BPF_REG_AX; shift counts and memory
// offsets stay. Blinded forms use fixed-size encodings, so the layout does
// not depend on k.
//
// # Registers
//
// BPF registers stay in x86 registers for the whole run:
//
//	R0 rbx   R1 rdi   R2 rsi   R3 rcx   R4 r8    R5 r9
//	R6 r13   R7 r14   R8 r15   R9 r10   R10 rbp
//
// r12 holds the execution context (the header in ctx.go), r11 the part of
// the instruction budget handed to native code; rax and rdx are scratch
// (division, address checks, cmpxchg). Shifts by a register need the count
// in cl, which belongs to R3, so R3 is parked in rdx meanwhile.
//
// # Stacks
//
// The BPF stack is env.Stack, as in the interpreter: R10 starts at its end
// and a bpf-to-bpf call moves it down by vm.StackSize bytes (the 512 a
// program may address and the hidden slots below them). The native stack is a
// separate off-heap mapping (with a guard page) in each execution context;
// a bpf-to-bpf call pushes there those of R6-R9 that the callee can write
// (the instructions reachable from its entry without entering calls, as
// encoded, so also for unverified code), moves R10 down and CALLs the
// callee, whose EXIT is a RET. The run itself enters through a stub that CALLs the entry
// function, so an EXIT at any depth is a RET.
//
// # Entering and leaving native code
//
// enter (enter_amd64.s, NOSPLIT|NOFRAME) saves Go's SP and BP in the header,
// loads the BPF registers and the budget from it, switches to the native
// stack saved there and jumps to the header's resume address. Native code
// leaves through one routine that stores the registers and its stack
// pointer in the header, restores Go's SP and BP and returns from enter;
// the header's exit word says why (instruction index << 8 | exit code).
// Go serves the exit and calls enter again:
//
//   - helper call: Go calls the helper with R1-R5 and the same vm.Env, puts
//     the result in R0 and resumes at the next instruction. A *vm.TailCall
//     runs the target with the interpreter's rules and resumes at a RET, so
//     the target's result is the current function's. This is the fast path
//     (about 5 ns): the exit skips storing R0, and Go refreshes nothing
//     unless the code is checked or uses LD_ABS/LD_IND (whose helper exits
//     have their own code).
//   - callx: Go resolves a helper id or a subprogram; a subprogram is
//     called natively after Go has checked depth and budget.
//   - checked-mode context access: Go calls env.CtxAccess and resumes after
//     the instruction; memory error, depth, budget: Go builds the
//     interpreter's *vm.RunError.
//   - LD_ABS/LD_IND at a negative offset: Go reads the header it names
//     (vm.LoadPacket) and resumes after the load, or at a RET with R0 = 0
//     when nothing is there. Past the packet's end native code itself
//     returns 0 from the function, as the kernel's expansion of the load
//     does.
//   - budget chunk used up: see below.
//
// Helpers may run callbacks (Call) and tail calls: those are new runs on
// other execution contexts from the pool, while the suspended run keeps
// its own.
//
// # Checked mode
//
// Before every load, store and atomic, checked code computes the address
// in rax and compares it with env.Stack (an inline subtract and compare
// against header fields; accesses through R10, or a register holding R10
// plus a constant within the basic block, inside the current frame need no
// check at all), then with the region matched last (the hot region), or
// in the other order where Options.NonStack says so. isa.ModeTrusted
// accesses, which the rewrite addresses from constants and map links,
// are never checked. A miss calls a shared routine that tries the
// emulated context region (if env.CtxAccess is set; not for atomics), then
// the region table in the header, a copy of the stack and env.Regions with
// their writability. The routine returns if the access is allowed;
// otherwise it exits to Go with the address and an access descriptor, and
// the run fails with the interpreter's error. Atomics are also checked for
// natural alignment. The table is refreshed after every exit to Go, since
// helpers move the packet, grant callback frames and swap regions for tail
// calls. Native code never faults on a program's behalf: it does not rely
// on signals. Unchecked code has no checks.
//
// # Probe loads
//
// isa.ModeProbe loads (reads of kernel objects, which read 0 where the run
// may not read) call a shared routine in checked and unchecked code alike:
// it tests the whole stack (header probeStack), then the region table, and
// sets ZF when the bytes lie in one; the load runs only then, otherwise the
// destination is zeroed. Code with probe loads keeps the table current in
// unchecked mode too (it syncs after helper calls as checked code does).
// About 1.5 ns a load, against 0.35 for a plain one (BenchmarkProbeLoad).
//
// # Budget
//
// The interpreter counts every instruction and checks the count at
// backward jumps and calls. Each memory mode has two kinds of code, for
// runs with and without a budget, compiled on first use (Options.Budgeted
// picks the kind Compile generates). With a budget, native code charges
// each basic block's instruction count to r11 when the block starts
// (blocks end at every jump and call, so the count is exact wherever it is
// looked at) and tests r11 at taken backward jumps and at calls, so both
// engines stop at the same instruction with the same error. Without one,
// the count only makes native code return to Go regularly, and a budget
// site charges a bound on the instructions run since the previous one
// instead, one fused sub+js: a backward jump the length of the span it
// jumps back over (charged before the compare, taken or not, so the jump
// stays a single branch), a call the size of the callee. Either way r11
// holds at most a chunk of the remaining budget, so that native code
// returns to Go regularly and the runtime can stop the world (a goroutine
// in native code cannot be preempted). When the chunk runs out Go either
// fails the run (vm.ErrBudget) or checks the run's context (its deadline
// by the clock too), refills the chunk and yields. Chunks are sized by
// time, not count (at most 2^20): each refill sizes the next to take about
// vm.SliceTime from how long the last took, and the image remembers the
// size for its next runs, so that a chunk of helper calls, cache misses or
// callbacks ends as soon as one of plain ALU code (program.go).
//
// # Runs
//
// Runs allocate nothing: an execution context (native stack, header and
// region table, all off-heap) is the one the runner keeps in vm.Env.Cache,
// or, for a run without one or nested in a run using it, comes from a
// sync.Pool. A run marks its
// context with the program's id using plain stores; Close uses
// membarrier(2) to see those marks, so it unmaps the code immediately when
// the program is idle and otherwise leaves it to the last run.
package amd64
