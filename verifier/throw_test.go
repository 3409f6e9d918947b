package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/maps"
)

// withTags gives a function decl tags of its own.
func withTags(fn *btf.Func, tags ...string) *btf.Func {
	fn.Tags = tags
	return fn
}

// TestThrow covers bpf_throw and exception callbacks as the kernel verifies
// them: the throwing path ends there; references and locks held, a
// callback frame and a direct call of the exception callback are refused;
// the exception callback is a global function of one scalar argument
// whose exit is checked as the program's.
func TestThrow(t *testing.T) {
	const throw = "call kernel-function#6\n"
	main := func(tags ...string) *btf.Func {
		return withTags(&btf.Func{Name: "main", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: btfInt, Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: btfXDPMd}}}}}, tags...)
	}
	cb := func(name string, params ...btf.Type) *btf.Func { return global(name, btfInt, params...) }
	tagCB := "exception_callback:cb"
	// Main, then the callback at instruction 5 that no call reaches.
	withCB := "r1 = *(u32 *)(r1 +12)\nif r1 > 5 goto +1\n" + throw + "r0 = 2\nexit\ncb: r0 = r1\nexit"
	cbFuncs := map[int]*btf.Func{0: main(tagCB), 1: cb("cb", btfU64)}
	rb := []maps.Spec{ringbuf}
	reserve := "r1 = map[fd:0] ll\nr2 = 16\nr3 = 0\ncall bpf_ringbuf_reserve#131\n"
	lk := []maps.Spec{lockHash}
	get := lookup4 + "if r0 == 0 goto out\nr6 = r0\n"
	out := "\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		{name: "throw in main", asm: "r1 = 7\n" + throw + "r0 = 0\nexit"},
		{name: "conditional throw", asm: "r2 = *(u32 *)(r1 +12)\nr1 = 1\nif r2 > 5 goto +1\n" + throw + "r0 = 2\nexit"},
		{name: "cookie not a scalar", asm: "r1 = r10\n" + throw + "r0 = 0\nexit", err: "R1 is not a scalar", kmsg: true},
		{name: "cookie unset", asm: "call bpf_get_prandom_u32#7\n" + throw + "r0 = 0\nexit", err: "R1 is not a scalar", kmsg: true},
		{name: "code after throw unreached", asm: "r1 = 0\n" + throw + "r0 = r5\nexit"},
		{name: "throw from static subprog", asm: "call f\nr0 = 0\nexit\nf: r1 = 3\n" + throw + "r0 = 0\nexit"},
		{name: "throw from global subprog", funcs: map[int]*btf.Func{1: global("g", btfInt, btfU64)}, asm: "r1 = 1\ncall g\nr0 = 0\nexit\ng: " + throw + "r0 = 0\nexit"},
		{name: "throw holding a reservation", maps: rb, asm: reserve + "if r0 == 0 goto out\nr1 = 9\n" + throw + "r0 = 0\nexit" + out, err: "bpf_throw would lead to reference leak", kmsg: true},
		{name: "subprog throw holding a reservation", maps: rb, asm: reserve + "if r0 == 0 goto out\nr6 = r0\ncall f\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_discard#133\nr0 = 0\nexit" + out + "\nf: r1 = 0\n" + throw + "r0 = 0\nexit", err: "Unreleased reference", kmsg: true},
		{name: "global throw holding a reservation", maps: rb, funcs: map[int]*btf.Func{1: global("g", btfInt, btfU64)}, asm: reserve + "if r0 == 0 goto out\nr6 = r0\nr1 = 1\ncall g\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_discard#133\nr0 = 0\nexit" + out + "\ng: call h\nr0 = 0\nexit\nh: r1 = 0\n" + throw + "r0 = 0\nexit", err: "bpf_throw would lead to reference leak", kmsg: true},
		{name: "global call holding a reservation", maps: rb, funcs: map[int]*btf.Func{1: global("g", btfInt, btfU64)}, asm: reserve + "if r0 == 0 goto out\nr6 = r0\nr1 = 1\ncall g\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_discard#133\nr0 = 0\nexit" + out + "\ng: r0 = 0\nexit"},
		{name: "throw holding a lock", maps: lk, asm: get + "r1 = r6\ncall bpf_spin_lock#93\nr1 = 0\n" + throw + "r0 = 0\nexit" + out, err: "function calls are not allowed while holding a lock", kmsg: true},
		{name: "throw in a loop callback", asm: "r1 = 4\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r1 = 0\n" + throw + "r0 = 0\nexit", err: "cannot be called from callback subprog", kmsg: true},
		{name: "throw below a loop callback", asm: "r1 = 4\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: call f\nr0 = 0\nexit\nf: r1 = 0\n" + throw + "r0 = 0\nexit", err: "cannot be called from callback subprog", kmsg: true},
		// clang leaves R0 unset in a function whose result it knows.
		{name: "static function returns nothing", asm: "call f\nr0 = 0\nexit\nf: exit"},
		{name: "static function result unset", asm: "call f\nexit\nf: exit", err: "R0 !read_ok", kmsg: true},
		{name: "exception callback", funcs: cbFuncs, excb: []int{5}, asm: withCB},
		{name: "exception callback small int", funcs: map[int]*btf.Func{0: main(tagCB), 1: cb("cb", btfInt)}, excb: []int{5}, asm: withCB},
		{name: "exception callback without throw", funcs: cbFuncs, excb: []int{2}, asm: "r0 = 0\nexit\ncb: r0 = r1\nexit"},
		{name: "exception callback two args", funcs: map[int]*btf.Func{0: main(tagCB), 1: cb("cb", btfU64, btfU64)}, excb: []int{5}, asm: withCB, err: "exception cb only supports single integer argument", kmsg: true},
		{name: "exception callback no args", funcs: map[int]*btf.Func{0: main(tagCB), 1: cb("cb")}, excb: []int{5}, asm: withCB, err: "exception cb only supports single integer argument", kmsg: true},
		{name: "exception callback static", funcs: map[int]*btf.Func{0: main(tagCB), 1: {Name: "cb", Linkage: btf.StaticFunc, Type: &btf.FuncProto{Return: btfInt, Params: []btf.FuncParam{{Name: "c", Type: btfU64}}}}}, excb: []int{5}, asm: withCB, err: "exception callback 'cb' must have global linkage", kmsg: true},
		{name: "two exception callbacks", funcs: map[int]*btf.Func{0: main(tagCB, "exception_callback:cb"), 1: cb("cb", btfU64)}, excb: []int{5}, asm: withCB, err: "multiple exception callback tags for main subprog", kmsg: true},
		{name: "exception callback missing", funcs: map[int]*btf.Func{0: main("exception_callback:nope"), 1: cb("cb", btfU64)}, excb: []int{5}, asm: withCB, err: "exception callback 'nope' could not be found in BTF", kmsg: true},
		{name: "exception callback throws", funcs: cbFuncs, excb: []int{2}, asm: "r0 = 0\nexit\ncb: " + throw + "r0 = 0\nexit", err: "cannot be called from callback subprog", kmsg: true},
		{name: "exception callback called", funcs: map[int]*btf.Func{0: main(tagCB), 2: cb("cb", btfU64)}, excb: []int{5}, asm: "call f\nexit\nf: r1 = 1\ncall cb\nexit\ncb: r0 = r1\nexit", err: "cannot call exception cb directly", kmsg: true},
		{name: "exception callback bad return", typ: ebpf.CGroupSKB, funcs: map[int]*btf.Func{0: main(tagCB), 1: cb("cb", btfU64)}, excb: []int{2}, asm: "r0 = 0\nexit\ncb: r0 = r1\nexit", err: "At program exit the register R0 has", kmsg: true},
		{name: "exception callback good return", typ: ebpf.CGroupSKB, funcs: map[int]*btf.Func{0: main(tagCB), 1: cb("cb", btfU64)}, excb: []int{2}, asm: "r0 = 0\nexit\ncb: r0 = r1\nr0 &= 1\nexit"},
		{name: "default callback bad cookie", typ: ebpf.CGroupSKB, asm: "r1 = 2\n" + throw + "r0 = 0\nexit", err: "At program exit the register R1 has", kmsg: true},
		{name: "default callback good cookie", typ: ebpf.CGroupSKB, asm: "r1 = 1\n" + throw + "r0 = 0\nexit"},
	})
}
