package verifier_test

import (
	"testing"

	"github.com/bpfvm/bpfvm/maps"
)

// TestArena covers the arena rules the kernel applies: its kfuncs are
// sleepable, which no program type bpfvm verifies may be; address space
// casts need an arena and one of the two directions; arena pointers load
// and store at any offset.
func TestArena(t *testing.T) {
	arena := maps.Spec{Name: "arena", Type: maps.Arena, MaxEntries: 4, Flags: maps.FlagMmapable, MapExtra: 1 << 32}
	am := []maps.Spec{arena}
	// An arena pointer from a user address in the stack.
	arenaPtr := "r1 = map[fd:0] ll\n*(u64 *)(r10 -8) = 0\nr1 = *(u64 *)(r10 -8)\nr1 = addr_space_cast(r1, 0, 1)\n"
	runCases(t, []vcase{
		{name: "alloc in xdp", maps: am, asm: "r1 = map[fd:0] ll\nr2 = 0\nr3 = 1\nr4 = -1\nr5 = 0\ncall kernel-function#7\nr0 = 0\nexit", err: "program must be sleepable to call sleepable kfunc bpf_arena_alloc_pages", kmsg: true},
		{name: "free in xdp", maps: am, asm: "r1 = map[fd:0] ll\nr2 = 0\nr3 = 1\ncall kernel-function#8\nr0 = 0\nexit", err: "program must be sleepable to call sleepable kfunc bpf_arena_free_pages", kmsg: true},
		{name: "arena referenced", maps: am, asm: "r1 = map[fd:0] ll\nr0 = 0\nexit"},
		// cilium/ebpf's encoder drops the casts' offset: no kernel
		// verdict for them.
		{name: "cast without arena", asm: "r1 = 0\nr1 = addr_space_cast(r1, 0, 1)\nr0 = 0\nexit", err: "addr_space_cast insn can only be used in a program that has an associated arena", noKernel: true},
		{name: "cast other space", maps: am, asm: "r1 = map[fd:0] ll\nr1 = 0\nr1 = addr_space_cast(r1, 0, 2)\nr0 = 0\nexit", err: "addr_space_cast insn can only convert between address space 1 and 0", noKernel: true},
		{name: "arena load and store", maps: am, asm: arenaPtr + "*(u64 *)(r1 +4096) = 7\nr2 = *(u32 *)(r1 -8)\n*(u8 *)(r1 +32767) = r2\nr0 = 0\nexit", noKernel: true},
		{name: "arena arithmetic", maps: am, asm: arenaPtr + "r2 = *(u32 *)(r10 -8)\nr1 += r2\nr1 <<= 3\nw1 += 9\nr0 = *(u64 *)(r1 +0)\nexit", noKernel: true},
		{name: "arena null check", maps: am, asm: arenaPtr + "if r1 == 0 goto +1\nr0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", noKernel: true},
		{name: "cast to user is a scalar", maps: am, asm: arenaPtr + "r1 = addr_space_cast(r1, 1, 0)\nr0 = *(u64 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", noKernel: true},
		{name: "arena atomic", maps: am, asm: arenaPtr + "r2 = 1\nlock *(u64 *)(r1 +0) += r2\nr0 = 0\nexit", noKernel: true},
		// A fetch leaves the register as it was on a page the arena
		// does not hold: any 64-bit value, even from a 32-bit one.
		{name: "arena fetch is 64-bit", maps: am, asm: arenaPtr + "r2 = -1\nw2 = atomic_fetch_add((u32 *)(r1 +0), w2)\nif r2 <= 0xffffffff goto +2\nr0 = 0\nexit\nr0 = 0\nexit", noKernel: true},
		{name: "arena sign-extending load", maps: am, asm: arenaPtr + "r0 = *(s8 *)(r1 +3)\nif r0 s< -128 goto +1\nr0 = 0\nexit", noKernel: true},
		// The x86-64 kernel's JIT has no fault handling for the
		// cmpxchg loops of fetching and, or and xor.
		{name: "arena fetch or", maps: am, asm: arenaPtr + "r2 = 1\nr2 = atomic64_fetch_or((u64 *)(r1 +0), r2)\nr0 = 0\nexit", err: "BPF_ATOMIC stores into R1 arena is not allowed", noKernel: true},
		{name: "arena xchg", maps: am, asm: arenaPtr + "r2 = 1\nr2 = atomic64_xchg((u64 *)(r1 +0), r2)\nr0 = 0\nexit", noKernel: true},
		{name: "arena load-acquire", maps: am, asm: arenaPtr + "r0 = load_acquire((u64 *)(r1 +0))\nr0 = 0\nexit", err: "not supported by bpfvm yet", noKernel: true},
	})
}
