package amd64

import (
	"errors"

	"github.com/bpfvm/bpfvm/vm"
)

// Mode selects the memory modes whose machine code Compile generates before
// returning. A run in a mode that was not compiled compiles it on first use.
type Mode uint8

const (
	// Checked code validates every access against the run's regions.
	Checked Mode = 1 << iota
	// Unchecked code accesses memory directly: for verified programs.
	Unchecked
)

// Options control compilation.
type Options struct {
	// Modes to compile eagerly; zero means Checked.
	Modes Mode
	// Natives says which helper ids a native routine serves: JIT code
	// calls the routine directly instead of exiting to Go. Nil: none.
	Natives func(id int32) vm.Native
	// Memory is the executable memory pool; nil is DefaultMemory().
	Memory *Memory
	// Unprivileged charges near memory against the pool's lower limit.
	Unprivileged bool
	// Far places the code in far memory, where calls to native routines
	// are indirect (as when near memory is exhausted).
	Far bool
	// Retpoline makes indirect calls go through a retpoline thunk emitted
	// once at the end of the image (Spectre v2 hardening).
	Retpoline bool
	// Budgeted says runs will be given an instruction budget: Compile
	// generates code with exact instruction accounting, which such runs
	// need. Runs without a budget use code that only counts backward jumps
	// and calls, which is cheaper in loops. A run needing the other kind
	// compiles it on first use.
	Budgeted bool
	// Blind rewrites every program-chosen immediate as imm^rnd with a
	// fresh random rnd, undone at run time in a scratch register, so that
	// a program cannot plant chosen bytes in executable memory (constant
	// blinding, as the kernel's bpf_jit_harden).
	Blind bool
	// NonStack marks, by instruction, loads and stores expected to go
	// outside the stack (from the verifier's pointer types): checked code
	// tries the hot region before the stack for them. It only orders the
	// two tests; an access is allowed or refused the same either way.
	NonStack []bool
	// Arena and ArenaUser are the program's arena window base and the
	// upper half of its user addresses (vm.Env.Arena), which arena
	// accesses and casts compile in (arena.go); 0 without an arena.
	Arena, ArenaUser uint64
}

// Native names a routine that JIT code calls directly for a helper.
//
// Deprecated: use vm.Native.
type Native = vm.Native

// Native routines, forwarding to vm's.
//
// Deprecated: use vm.NoNative and the other vm.Native constants.
const (
	NoNative     = vm.NoNative
	NativeCPU    = vm.NativeCPU
	NativeZero   = vm.NativeZero
	NativeRandom = vm.NativeRandom
)

// Tier says where a program's machine code lives.
type Tier uint8

// Tiers of executable memory.
const (
	// TierNone: no machine code (the program runs on the interpreter).
	TierNone Tier = iota
	// TierNear: near memory, within rel32 reach of the native routines.
	TierNear
	// TierFar: anywhere; native routines are called indirectly.
	TierFar
)

// String returns the tier's name: near, far or none.
func (t Tier) String() string {
	switch t {
	case TierNear:
		return "near"
	case TierFar:
		return "far"
	}
	return "none"
}

// Info describes the machine code of a program in one memory mode.
type Info struct {
	Tier        Tier
	CodeSize    int  // bytes of machine code
	Pages       int  // pages of executable memory it occupies
	NativeCalls int  // call sites of native routines
	Indirect    bool // native routines are called indirectly
	Retpoline   bool // ... through the retpoline thunk
	Blinded     bool // constants are blinded
}

// MemoryConfig sets the limits of an executable memory pool (bytes).
type MemoryConfig struct {
	// NearLimit bounds the near memory of privileged loads, like the
	// kernel's bpf_jit_limit; 0 means DefaultNearLimit.
	NearLimit int
	// UnprivNearLimit bounds near memory for unprivileged loads; 0 means
	// a quarter of NearLimit.
	UnprivNearLimit int
	// FarLimit bounds far memory; 0 means no limit, negative no far
	// memory at all.
	FarLimit int
}

// DefaultNearLimit is the near memory of a pool by default. It is
// reserved as address space near the Go binary's text and committed page
// by page.
const DefaultNearLimit = 128 << 20

// ErrNoMemory is returned by Compile when neither near nor far executable
// memory is available (the caller runs the program on the interpreter).
var ErrNoMemory = errors.New("jit: no executable memory")

// ErrClosed is returned by runs of a closed program.
var ErrClosed = errors.New("jit: program closed")

// ErrNotSupported is returned by Compile where there is no JIT (other
// architectures and operating systems).
var ErrNotSupported = errors.New("jit: not supported on this platform")
